import { Injectable, OnModuleInit } from '@nestjs/common';
import { within } from '#common/async/within.js';
import { InjectDataSource } from '@nestjs/typeorm';
import { Gauge } from 'prom-client';
import { DataSource } from 'typeorm';
import { MetricsRegistry } from '#common/metrics/metrics.registry.js';
import { QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';

/** How long a scrape waits for the queue's counts (docs/decisions/0038). */
const QUEUE_READ_TIMEOUT_MS = 1_000;

/**
 * Webhook health for /v1/metrics, computed at scrape time from the outbox (the
 * record of every event and attempt) and the queue, so the API reports what
 * all workers did.
 */
@Injectable()
export class WebhookMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsRegistry,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly queues: QueueFactory,
  ) {}

  onModuleInit(): void {
    const registers = [this.metrics.registry];
    const dataSource = this.dataSource;
    const queues = this.queues;
    new Gauge({
      name: 'webhook_events',
      help: 'Webhook events waiting for delivery (pending) or given up on (failed, replayable)',
      labelNames: ['status'],
      registers,
      async collect() {
        const rows = (await dataSource.query(
          `SELECT status, count(*)::int AS n FROM webhook_events WHERE status IN ('pending', 'failed') GROUP BY status`,
        )) as { status: string; n: number }[];
        for (const status of ['pending', 'failed']) {
          this.set({ status }, rows.find((row) => row.status === status)?.n ?? 0);
        }
      },
    });
    new Gauge({
      name: 'webhook_queue_jobs',
      help: 'Delivery jobs in the queue by state',
      labelNames: ['state'],
      registers,
      async collect() {
        // A queue that does not answer (Redis down) must not hold the whole scrape: no samples this time
        // (readiness reports the queue down), rather than the last ones as if they were current.
        const counts = await within(QUEUE_READ_TIMEOUT_MS, () =>
          queues.queue(QUEUES.webhooks).getJobCounts('waiting', 'active', 'delayed', 'failed'),
        );
        this.reset();
        if ('value' in counts) for (const [state, n] of Object.entries(counts.value)) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'webhook_attempts_failed_recent',
      help: 'Failed delivery attempts in the last 15 minutes',
      registers,
      async collect() {
        const [row] = (await dataSource.query(
          `SELECT count(*)::int AS n FROM webhook_attempts WHERE outcome = 'failed' AND started_at > now() - interval '15 minutes'`,
        )) as { n: number }[];
        this.set(row.n);
      },
    });
    new Gauge({
      name: 'webhook_delivery_latency_seconds',
      help: 'Event commit to acknowledged delivery, events delivered in the last 15 minutes',
      labelNames: ['quantile'],
      registers,
      async collect() {
        const [row] = (await dataSource.query(
          `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - created_at)) AS p50,
                  percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - created_at)) AS p99
             FROM webhook_events WHERE status = 'delivered' AND delivered_at > now() - interval '15 minutes'`,
        )) as { p50: number | null; p99: number | null }[];
        this.set({ quantile: '0.5' }, Number(row.p50 ?? 0));
        this.set({ quantile: '0.99' }, Number(row.p99 ?? 0));
      },
    });
  }
}
