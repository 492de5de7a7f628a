import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { RepeatThrottle } from '#common/logging/repeat-throttle.js';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { DATABASE_RUNTIME, type DatabaseRuntime } from '#common/database/database-runtime.js';
import { QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';
import { WebhookDeliveryService } from './webhook-delivery.service.js';
import { deliveryJobId, WEBHOOK_NOTIFY_CHANNEL } from './webhook-events.js';

/**
 * Job states in which the queue will still run the job. Not 'active': the sweeper only looks at events
 * whose lease is free, and a worker that runs a delivery holds the lease; an active job on an event
 * nobody leases belongs to a worker that died (its job would wait for BullMQ's stalled-job check).
 */
const LIVE_STATES = new Set(['waiting', 'delayed', 'prioritized', 'waiting-children']);

/** At most this many events per addBulk (20 batch jobs: one Redis pipeline, or one PostgreSQL transaction). */
const RELAY_BATCH = 1000;

/**
 * Moves committed outbox events into the queue (worker side only):
 * - the relay LISTENs for the outbox trigger's NOTIFY (sent on commit only)
 *   and enqueues the notices of one turn of the event loop as batch jobs of
 *   up to 50 events (one addBulk; job id `<first event id>.<generation>+<n>`,
 *   so workers relaying the same notices alike add one job). A notice two
 *   workers batch differently is claimed by one of them: the other's
 *   delivery of it skips (docs/decisions/0036-webhook-batch-jobs.md);
 * - the sweeper, on a timer that needs neither Redis nor the relay, finds
 *   pending events whose job the queue lost (Redis flushed or down when they
 *   were written, relay disconnected, worker killed) and enqueues them again.
 */
@Injectable()
export class WebhookRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private client?: pg.Client;
  private stopping = false;
  private sweepTimer?: NodeJS.Timeout;
  private reconnectTimer?: NodeJS.Timeout;
  private sweeping = false;
  private reconnectDelayMs = 500;
  /** Failures that repeat while the database or Redis is down: once, then every 30 s with a count. */
  private readonly failures = new RepeatThrottle();
  /** Notices received in this turn of the event loop, enqueued together (one addBulk). */
  private notices: { eventId: string; generation: number }[] = [];

  constructor(
    @Inject(DATABASE_RUNTIME) private readonly database: DatabaseRuntime,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly queues: QueueFactory,
    private readonly delivery: WebhookDeliveryService,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('WebhookRelay');
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.listen();
    this.sweepTimer = setInterval(() => void this.sweep(), this.config.webhookSweepIntervalMs);
    this.sweepTimer.unref();
    // At start, anything pending and unleased is due: events written while no worker ran go out now. In the
    // background: with Redis down, the sweep waits for it and must not hold the application's start.
    void this.sweep(0);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.sweepTimer);
    clearTimeout(this.reconnectTimer);
    await this.client?.end().catch(() => undefined);
  }

  /** Enqueues every pending event whose delivery job is not in the queue. Returns how many it enqueued. */
  async sweep(graceMs = 10_000): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    let enqueued = 0;
    try {
      const rows = (await this.dataSource.query(
        `SELECT e.id, e.generation FROM webhook_events e
          WHERE e.status = 'pending'
            AND (e.lease_until IS NULL OR e.lease_until < now())
            AND (e.next_attempt_at IS NULL OR e.next_attempt_at < now() - ($1::int * interval '1 millisecond'))
            AND NOT EXISTS (
              SELECT 1 FROM webhook_events p
               WHERE p.app_id = e.app_id AND p.subject = e.subject AND p.status = 'pending' AND p.seq < e.seq)
          ORDER BY e.seq LIMIT 1000`,
        [graceMs],
      )) as { id: string; generation: number }[];
      const queue = this.queues.queue(QUEUES.webhooks);
      for (const row of rows) {
        const job = await queue.getJob(deliveryJobId(row.id, row.generation));
        if (job && LIVE_STATES.has(await job.getState())) continue;
        // Compare-and-set on the generation: of several sweeping workers, one enqueues.
        const [bumped] = (await this.dataSource.query(
          `UPDATE webhook_events SET generation = generation + 1, next_attempt_at = now()
            WHERE id = $1 AND generation = $2 AND status = 'pending' RETURNING generation`,
          [row.id, row.generation],
        )) as [{ generation: number }[], number];
        if (!bumped[0]) continue;
        await this.delivery.enqueue(row.id, bumped[0].generation);
        enqueued++;
      }
      if (enqueued > 0) this.logger.info({ enqueued }, 'sweeper re-enqueued webhook events');
    } catch (error) {
      this.failures.report('sweep', (fields) =>
        this.logger.warn({ err: error, ...fields }, 'webhook sweep failed; will try again'),
      );
    } finally {
      this.sweeping = false;
    }
    return enqueued;
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.database.url,
      application_name: 'wallet-webhook-relay',
      keepAlive: true,
    });
    client.on('notification', (message) => {
      if (message.channel === WEBHOOK_NOTIFY_CHANNEL && message.payload) this.relay(message.payload);
    });
    client.on('error', (error) =>
      this.failures.report('connection', (fields) =>
        this.logger.warn({ err: error, ...fields }, 'relay connection error'),
      ),
    );
    client.on('end', () => this.reconnect());
    try {
      await client.connect();
      await client.query(`LISTEN ${WEBHOOK_NOTIFY_CHANNEL}`);
      this.client = client;
      this.reconnectDelayMs = 500;
    } catch (error) {
      this.failures.report('listen', (fields) =>
        this.logger.warn({ err: error, ...fields }, 'relay cannot LISTEN yet'),
      );
      await client.end().catch(() => undefined);
      this.reconnect();
    }
  }

  private reconnect(): void {
    if (this.stopping || this.reconnectTimer) return;
    this.client = undefined;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.listen().then(() => this.sweep(0));
    }, this.reconnectDelayMs);
    this.reconnectDelayMs = Math.min(this.reconnectDelayMs * 2, 30_000);
  }

  private relay(notice: string): void {
    const dot = notice.lastIndexOf('.');
    this.notices.push({ eventId: notice.slice(0, dot), generation: Number(notice.slice(dot + 1)) });
    // A transaction that writes many events delivers its NOTIFYs at once: they go to the queue together.
    if (this.notices.length === 1) setImmediate(() => this.flushNotices());
  }

  private flushNotices(): void {
    const notices = this.notices;
    this.notices = [];
    for (let start = 0; start < notices.length; start += RELAY_BATCH) {
      const jobs = notices.slice(start, start + RELAY_BATCH);
      this.delivery.enqueueFresh(jobs).catch((error: unknown) =>
        // The events stay pending in the database; the sweeper enqueues them once the queue answers.
        this.logger.warn(
          { err: error, events: jobs.length, firstEventId: jobs[0].eventId },
          'could not enqueue webhook events; the sweeper will retry',
        ),
      );
    }
  }
}
