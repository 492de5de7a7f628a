import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { runExclusive } from '#common/database/sweep-lock.js';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { DataSource } from 'typeorm';
import { QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';
import { SmsQueue, submitJobId } from './sms-queue.js';
import { SMS_STATUS } from './sms-status.js';

const SWEEP_INTERVAL_MS = 30_000;
const LIVE_STATES = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

/**
 * The database is the record of what must be sent: every worker looks, on a
 * timer, for QUEUED messages whose submit job the queue no longer holds
 * (enqueue failed after commit, Redis flushed, attempts exhausted during a
 * long outage) and enqueues them again.
 */
@Injectable()
export class SmsSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private sweeping = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly queues: QueueFactory,
    private readonly queue: SmsQueue,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('SmsSweeper');
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** Enqueues QUEUED messages older than `graceMs` that have no live job. Returns how many. */
  async sweep(graceMs = 60_000): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    let enqueued = 0;
    try {
      // One sweeper at a time across the workers: two could both find a job gone and enqueue it twice.
      enqueued =
        (await runExclusive(this.dataSource, 'sms-sweep', async () => {
          let count = 0;
          const rows = (await this.dataSource.query(
            `SELECT id FROM sms_messages
          WHERE status = $1 AND created_at < now() - ($2::int * interval '1 millisecond')
          ORDER BY created_at LIMIT 1000`,
            [SMS_STATUS.queued, graceMs],
          )) as { id: string }[];
          const queue = this.queues.queue(QUEUES.sms);
          for (const { id } of rows) {
            const job = await queue.getJob(submitJobId(id));
            if (job && LIVE_STATES.has(await job.getState())) continue;
            await job?.remove();
            await this.queue.enqueueSubmit(id);
            count++;
          }
          return count;
        })) ?? 0;
      if (enqueued > 0) this.logger.info({ enqueued }, 'sweeper re-enqueued queued SMS');
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'SMS sweep failed; will try again');
    } finally {
      this.sweeping = false;
    }
    return enqueued;
  }
}
