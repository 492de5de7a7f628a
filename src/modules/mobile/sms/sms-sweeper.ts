import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { runExclusive } from '#common/database/sweep-lock.js';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { DataSource } from 'typeorm';
import { QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';
import { SmsQueue, submitJobId } from './sms-queue.js';
import { SmsSimulatorProvider } from './sms-simulator.provider.js';
import { SMS_STATUS } from './sms-status.js';

const SWEEP_INTERVAL_MS = 30_000;
const LIVE_STATES = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

/**
 * The database is the record of what must be sent: every worker looks, on a
 * timer, for QUEUED messages whose submit job the queue no longer holds
 * (enqueue failed after commit, Redis flushed, attempts exhausted during a
 * long outage) and enqueues them again; and for messages the simulator took
 * whose receipt is overdue (its job failed through a database fault, or was
 * lost with the queue), and reports their receipt (decision 0089).
 */
@Injectable()
export class SmsSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private sweeping = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly queues: QueueFactory,
    private readonly queue: SmsQueue,
    private readonly simulator: SmsSimulatorProvider,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
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

  /**
   * Enqueues QUEUED messages older than `graceMs` that have no live job, and reports the receipt of simulator
   * messages ENROUTE for longer than the simulator's delay plus `graceMs`. Returns how many messages it acted on.
   */
  async sweep(graceMs = 60_000): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      return (await this.requeue(graceMs)) + (await this.reportOverdueReceipts(graceMs));
    } finally {
      this.sweeping = false;
    }
  }

  private async requeue(graceMs: number): Promise<number> {
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
    }
    return enqueued;
  }

  /**
   * The simulator's receipt of each message it took that is still ENROUTE `graceMs` after the receipt was due,
   * reported now. Whatever happened to its job: failed through a database fault (its five attempts span about 15 s),
   * or lost with the queue. Only the database is read, so either queue backend is the same. The simulator's
   * receipt never replaces a final status: should the job's receipt come too, the message keeps the first one.
   */
  private async reportOverdueReceipts(graceMs: number): Promise<number> {
    let reported = 0;
    try {
      // One worker at a time: two would both report, the second to no effect.
      reported =
        (await runExclusive(this.dataSource, 'sms-simulator-receipt-sweep', async () => {
          const rows = (await this.dataSource.query(
            `SELECT dnis, provider_message_id FROM sms_messages
              WHERE provider = $1 AND provider_message_id IS NOT NULL AND status = $2
                AND submitted_at < now() - ($3::int * interval '1 millisecond')
              ORDER BY submitted_at LIMIT 1000`,
            [this.simulator.name, SMS_STATUS.enroute, this.config.mobile.smsSimDeliveryDelayMs + graceMs],
          )) as { dnis: string; provider_message_id: string }[];
          for (const row of rows) {
            await this.simulator.report(this.simulator.receiptFor(row.dnis, row.provider_message_id));
          }
          return rows.length;
        })) ?? 0;
      if (reported > 0) this.logger.info({ reported }, 'sweeper reported overdue simulated SMS receipts');
    } catch (error) {
      this.logger.warn(
        { err: (error as Error).message },
        'simulated SMS receipt sweep failed; will try again',
      );
    }
    return reported;
  }
}
