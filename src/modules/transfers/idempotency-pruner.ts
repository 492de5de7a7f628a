import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { DataSource } from 'typeorm';

/** Idempotency keys are kept at least 24 hours; the worker forgets them after 48 (hourly). */
@Injectable()
export class IdempotencyKeyPruner implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('IdempotencyKeyPruner');
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.prune(), 3_600_000);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  async prune(olderThanHours = 48): Promise<number> {
    try {
      const [, deleted] = (await this.dataSource.query(
        `DELETE FROM idempotency_keys WHERE created_at < now() - ($1::int * interval '1 hour')`,
        [olderThanHours],
      )) as [unknown, number];
      return deleted;
    } catch (error) {
      this.logger.warn({ err: error }, 'pruning idempotency keys failed; will try again');
      return 0;
    }
  }
}
