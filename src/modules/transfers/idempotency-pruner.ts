import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { DataSource } from 'typeorm';
import { BatchedDeleteError, deleteInBatches } from '#common/database/batched-delete.js';

/** Keys deleted per statement. */
const PRUNE_BATCH = 5_000;
/** Statements per hourly run: 10M keys, above the service's hourly rate of transfers (decision 0075). */
const PRUNE_MAX_BATCHES = 2_000;

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

  /**
   * Deletes the keys older than `olderThanHours` in batches (decision 0075): one DELETE of a backlog of millions
   * passed the statement timeout, rolled back whole, and left a larger backlog for the next run. Answers the keys
   * deleted, also by a run that failed part way (decision 0078).
   */
  async prune({
    olderThanHours = 48,
    batch = PRUNE_BATCH,
    maxBatches = PRUNE_MAX_BATCHES,
  }: { olderThanHours?: number; batch?: number; maxBatches?: number } = {}): Promise<number> {
    try {
      const { deleted } = await deleteInBatches(this.dataSource, {
        table: 'idempotency_keys',
        key: 'app_id, key',
        where: `created_at < now() - ($1::int * interval '1 hour')`,
        params: [olderThanHours],
        batch,
        maxBatches,
      });
      return deleted;
    } catch (error) {
      // The batches deleted before the failed one stay deleted: the next run goes on from there.
      const deleted = error instanceof BatchedDeleteError ? error.deleted : 0;
      this.logger.warn({ err: error, deleted }, 'pruning idempotency keys failed; will try again');
      return deleted;
    }
  }
}
