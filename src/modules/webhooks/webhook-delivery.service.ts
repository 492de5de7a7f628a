import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { PinoLogger } from '#common/logging/pino-logger.js';
import type pg from 'pg';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';
import { SigningKeysService } from '#modules/auth/signing-keys.service.js';
import type { WebhookPayload } from './entities/webhook-event.entity.js';
import { MicroBatcher } from '#common/database/micro-batcher.js';
import { PG_POOL } from '#common/database/pg-pool.js';
import { WebhookSender, type SendResult } from './webhook-sender.js';
import { WebhookSigner } from './webhook-signer.js';
import { deliveryJobId } from './webhook-events.js';

/** The content type the interface shows for webhook bodies (a compact JWS). */
export const WEBHOOK_CONTENT_TYPE = 'plain/text';

interface ClaimedEvent {
  id: string;
  subject: string | null;
  payload: WebhookPayload;
  /** This attempt's number; with the lease, it fences the outcome (see RECORD). */
  attempts: number;
  url: string | null;
}

/** One attempt's result, to be recorded. */
interface Attempt {
  id: string;
  attempt: number;
  url: string | null;
  startedAtMs: number;
  durationMs: number;
  statusCode: number | null;
  delivered: boolean;
  error: string | null;
  /** Delay before the next attempt; null when there is none (delivered, or the last attempt failed). */
  retryDelayMs: number | null;
}

export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed' | 'skipped';

/** A job to add once an outcome is recorded: a retry (delayed) or the next event of a subject. */
interface FollowUp {
  id: string;
  generation: number;
  delay_ms: number;
}

/**
 * Claims events in batches: each due, pending event that is first of its subject and not held by another
 * worker gets a lease and its attempt number bumped; the others that wait for an earlier event of their
 * subject are parked (next_attempt_at NULL) until that one is done. What delivery needs (payload, URL)
 * comes back in the same round trip. Every data-modifying CTE runs on one snapshot, and the two sets are
 * disjoint by the EXISTS / NOT EXISTS on the earlier event. Repeated after its commit was lost with the
 * connection, it claims nothing (the leases are taken): those jobs skip, and the events go out again once
 * the leases expire (the sweeper), as after a killed worker.
 */
const CLAIM = `
WITH input AS (
  SELECT DISTINCT unnest(string_to_array($1, ','))::uuid AS id, 'pending'::text AS pending
), claimed AS (
  UPDATE webhook_events e
     SET lease_until = now() + ($2::int * interval '1 millisecond'),
         attempts = attempts + 1, last_attempt_at = now()
    FROM input i
   WHERE e.id = i.id AND e.status = i.pending
     AND (e.lease_until IS NULL OR e.lease_until < now())
     AND (e.next_attempt_at IS NULL OR e.next_attempt_at <= now() + interval '50 milliseconds')
     AND NOT EXISTS (
       SELECT 1 FROM webhook_events p
        WHERE p.app_id = e.app_id AND p.subject = e.subject AND p.status = 'pending' AND p.seq < e.seq
       OFFSET 0)
  RETURNING e.id, e.app_id, e.subject, e.payload, e.attempts
), parked AS (
  UPDATE webhook_events e SET next_attempt_at = NULL
    FROM input i
   WHERE e.id = i.id AND e.status = i.pending
     AND (e.lease_until IS NULL OR e.lease_until < now())
     AND EXISTS (
       SELECT 1 FROM webhook_events p
        WHERE p.app_id = e.app_id AND p.subject = e.subject AND p.status = 'pending' AND p.seq < e.seq
       OFFSET 0)
  RETURNING e.id
)
SELECT c.id, c.subject, c.payload, c.attempts, a.webhook_url AS url
  FROM claimed c LEFT JOIN applications a ON a.id = c.app_id`;

/**
 * Records a batch of attempts in one statement (one commit):
 * - one webhook_attempts row per attempt; a repeated statement (retried after a connection was lost at
 *   commit) adds none twice (the same event, attempt and start time);
 * - the event's outcome (delivered; failed for good; or pending with the next attempt due after its
 *   delay and a new generation), only while this attempt still holds the event (status pending, the lease
 *   taken, the attempt number unchanged): a worker whose lease ran out while another took the event over
 *   records its attempt but leaves the event to the other; a repeated statement changes nothing;
 * - for each event done for good, the next pending event of its subject is scheduled (the same snapshot
 *   still shows the finished events pending, hence `p.id <> d.id`).
 * Answers the jobs to add: the retries (delay_ms > 0) and the woken events (delay_ms 0).
 */
const RECORD = `
WITH input AS (
  SELECT i.*, 'pending'::text AS pending FROM jsonb_to_recordset($1::jsonb)
      AS i(id uuid, attempt int, url text, started_ms float8, duration_ms int, status_code int, outcome text,
           error text, retry_delay_ms int)
), done AS (
  UPDATE webhook_events e
     SET status = CASE WHEN i.outcome = 'delivered' THEN 'delivered'
                       WHEN i.retry_delay_ms IS NULL THEN 'failed' ELSE 'pending' END,
         delivered_at = CASE WHEN i.outcome = 'delivered' THEN now() END,
         lease_until = NULL,
         next_attempt_at = CASE WHEN i.outcome = 'failed' AND i.retry_delay_ms IS NOT NULL
                                THEN now() + i.retry_delay_ms * interval '1 millisecond' END,
         last_error = i.error,
         generation = e.generation + CASE WHEN i.outcome = 'failed' AND i.retry_delay_ms IS NOT NULL
                                          THEN 1 ELSE 0 END
    FROM input i
   WHERE e.id = i.id AND e.status = i.pending AND e.lease_until IS NOT NULL AND e.attempts = i.attempt
  RETURNING e.id, e.app_id, e.subject, e.status, e.generation, i.retry_delay_ms
), attempts AS (
  INSERT INTO webhook_attempts (event_id, attempt, url, started_at, duration_ms, status_code, outcome, error)
  SELECT i.id, i.attempt, i.url, to_timestamp(i.started_ms / 1000), i.duration_ms, i.status_code, i.outcome,
         i.error
    FROM input i
   WHERE NOT EXISTS (
     SELECT 1 FROM webhook_attempts a
      WHERE a.event_id = i.id AND a.attempt = i.attempt AND a.started_at = to_timestamp(i.started_ms / 1000)
     OFFSET 0)
), woken AS (
  UPDATE webhook_events n SET next_attempt_at = now(), generation = n.generation + 1
    FROM (SELECT DISTINCT nx.id
            FROM done d
           CROSS JOIN LATERAL (
             SELECT p.id FROM webhook_events p
              WHERE p.app_id = d.app_id AND p.subject = d.subject AND p.status = 'pending' AND p.id <> d.id
              ORDER BY p.seq LIMIT 1) nx
           WHERE d.status <> 'pending' AND d.subject IS NOT NULL) w
   WHERE n.id = w.id AND n.status = 'pending'
     AND (n.lease_until IS NULL OR n.lease_until < now())
     AND (n.next_attempt_at IS NULL OR n.next_attempt_at <= now())
  RETURNING n.id, n.generation
)
SELECT id, generation, retry_delay_ms AS delay_ms FROM done WHERE status = 'pending'
UNION ALL
SELECT id, generation, 0 FROM woken`;

/*
 * On plans: the outbox's statistics lag behind a burst (20,000 rows committed at once look like a few dozen
 * pending ones until autovacuum analyses the table), and the planner then prefers scanning every pending
 * row through idx_webhook_events_pending and hashing. The batches are meant to look rows up by primary key,
 * one probe per input row, whatever the table holds: hence `e.status = i.pending` (a value from the input,
 * which no partial index predicate can match) and `OFFSET 0` in the [NOT] EXISTS subqueries (each kept a
 * per-row probe, planned on its own, so on the index that matches it, rather than turned into a join).
 */

/** Claim and record batches: how large, how many at once (each holds a pool connection while it runs). */
const BATCH = { max: 500, concurrency: 2, gather: true };
/** A batch statement that fails (connection terminated, deadlock, failover) is tried again after these. */
const BATCH_RETRY_DELAYS_MS = [50, 250, 1000];

/**
 * Delivers outbox events, one job per event, with the database work of many jobs batched:
 * - claim (batched): a lease (so two workers never send an event at once, and a killed worker's claim
 *   expires), per-subject order, and the payload and URL in the same round trip;
 * - sign the payload as a compact JWS with the current service key, POST it;
 * - record (batched): the attempt row and the event's outcome; the job completes only once its outcome
 *   is committed, so a worker killed before that loses nothing (the lease expires, the event goes again
 *   with the same Webhook-Id); then the retries and the next events of finished subjects are enqueued.
 */
@Injectable()
export class WebhookDeliveryService implements OnApplicationShutdown {
  private readonly sender: WebhookSender;
  private readonly signer = new WebhookSigner();
  readonly maxAttempts: number;
  private readonly leaseMs: number;
  private readonly claims: MicroBatcher<string, ClaimedEvent | undefined>;
  private readonly records: MicroBatcher<Attempt, DeliveryOutcome>;

  constructor(
    @Inject(PG_POOL) private readonly pool: pg.Pool,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly signingKeys: SigningKeysService,
    private readonly queues: QueueFactory,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('WebhookDelivery');
    this.sender = new WebhookSender({
      allowPrivate: config.webhookAllowPrivateUrls,
      timeoutMs: config.webhookTimeoutMs,
      maxResponseBytes: 64 * 1024,
    });
    this.maxAttempts = config.webhookRetryDelaysMs.length + 1;
    this.leaseMs = config.webhookTimeoutMs + 20_000;
    this.claims = new MicroBatcher({ ...BATCH, run: async (ids) => settled(await this.claimBatch(ids)) });
    this.records = new MicroBatcher({
      ...BATCH,
      run: async (attempts) => settled(await this.recordBatch(attempts)),
    });
  }

  /**
   * The consumers stop first (they wait for the jobs they run, whose POSTs need the connection pool),
   * then the pool closes.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.queues.closeWorkers();
    await this.sender.close();
  }

  async deliver(eventId: string): Promise<DeliveryOutcome> {
    const event = await this.claims.submit(eventId);
    if (!event) return 'skipped';
    const startedAtMs = Date.now();
    let result: SendResult;
    if (!event.url) {
      result = { error: 'no webhook URL is configured for the application', durationMs: 0 };
    } else {
      const body = this.signer.sign(await this.signingKeys.current(), event.payload);
      result = await this.sender.send(event.url, body, {
        'Content-Type': WEBHOOK_CONTENT_TYPE,
        'Webhook-Id': event.id,
        'Webhook-Timestamp': String(Math.floor(startedAtMs / 1000)),
        'User-Agent': 'wallet-webhooks/1',
      });
    }
    const delivered = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    const error = delivered ? null : (result.error ?? `HTTP ${result.statusCode}`);
    const retryDelayMs =
      delivered || event.attempts >= this.maxAttempts
        ? null
        : this.retryDelay(event.attempts, result.retryAfterMs);
    if (!delivered) {
      // Failures one by one; successes are in webhook_attempts (a log line each would cost more than the POST).
      this.logger.info(
        {
          eventId: event.id,
          attempt: event.attempts,
          statusCode: result.statusCode,
          ms: result.durationMs,
          error,
        },
        'webhook attempt failed',
      );
    }
    return this.records.submit({
      id: event.id,
      attempt: event.attempts,
      url: event.url,
      startedAtMs,
      durationMs: result.durationMs,
      statusCode: result.statusCode ?? null,
      delivered,
      error,
      retryDelayMs,
    });
  }

  /** Delay before attempt `attempts + 1`: the configured schedule with ±10 % jitter, at least Retry-After. */
  retryDelay(attempts: number, retryAfterMs?: number): number {
    const base = this.config.webhookRetryDelaysMs[Math.min(attempts, this.maxAttempts - 1) - 1] ?? 0;
    const jittered = Math.round(base * (0.9 + Math.random() * 0.2));
    return Math.max(jittered, Math.min(retryAfterMs ?? 0, 24 * 3_600_000));
  }

  async enqueue(eventId: string, generation: number, delayMs = 0): Promise<void> {
    await this.queues
      .queue(QUEUES.webhooks)
      .add(JOBS.deliverWebhook, { eventId }, { jobId: deliveryJobId(eventId, generation), delay: delayMs });
  }

  /** Adds many delivery jobs in one round trip (ids `<eventId>.<generation>`, so a repeated add is a no-op). */
  async enqueueMany(
    jobs: readonly { eventId: string; generation: number; delayMs?: number }[],
  ): Promise<void> {
    if (jobs.length === 0) return;
    await this.queues.queue(QUEUES.webhooks).addBulk(
      jobs.map(({ eventId, generation, delayMs }) => ({
        name: JOBS.deliverWebhook,
        data: { eventId },
        opts: { jobId: deliveryJobId(eventId, generation), delay: delayMs ?? 0 },
      })),
    );
  }

  /** One claim per id; an id asked for twice in a batch (two jobs of one event) is claimed for the first. */
  private async claimBatch(ids: string[]): Promise<(ClaimedEvent | undefined)[]> {
    const rows = await this.batchQuery<ClaimedEvent>('claim', CLAIM, [ids.join(','), this.leaseMs]);
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.map((id) => {
      const row = byId.get(id);
      byId.delete(id);
      return row;
    });
  }

  private async recordBatch(attempts: Attempt[]): Promise<DeliveryOutcome[]> {
    const input = attempts.map((a) => ({
      id: a.id,
      attempt: a.attempt,
      url: a.url,
      started_ms: a.startedAtMs,
      duration_ms: a.durationMs,
      status_code: a.statusCode,
      outcome: a.delivered ? 'delivered' : 'failed',
      error: a.error,
      retry_delay_ms: a.retryDelayMs,
    }));
    const followUps = await this.batchQuery<FollowUp>('record', RECORD, [JSON.stringify(input)]);
    // Recorded: the retries and woken events are due in the database. Should the queue not take them
    // now, the sweeper enqueues them once they are overdue.
    await this.enqueueMany(
      followUps.map((row) => ({ eventId: row.id, generation: row.generation, delayMs: row.delay_ms })),
    ).catch((error: unknown) =>
      this.logger.warn({ err: error, jobs: followUps.length }, 'could not enqueue follow-up webhook jobs'),
    );
    return attempts.map((a) => (a.delivered ? 'delivered' : a.retryDelayMs === null ? 'failed' : 'retrying'));
  }

  /**
   * A batch statement, tried again a few times (see CLAIM and RECORD for why that is safe), as a prepared
   * statement on the TypeORM pool's connections (parsed and planned once per connection).
   */
  private async batchQuery<T>(what: 'claim' | 'record', sql: string, parameters: unknown[]): Promise<T[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        return (
          await this.pool.query<T & pg.QueryResultRow>({
            name: `webhook-${what}`,
            text: sql,
            values: parameters,
          })
        ).rows;
      } catch (error) {
        if (attempt >= BATCH_RETRY_DELAYS_MS.length) throw error;
        this.logger.warn({ err: error, attempt: attempt + 1 }, `webhook ${what} batch failed; trying again`);
        await new Promise((resolve) => setTimeout(resolve, BATCH_RETRY_DELAYS_MS[attempt]));
      }
    }
  }
}

/** Every item of a batch answered with its value. */
function settled<O>(values: O[]): { value: O }[] {
  return values.map((value) => ({ value }));
}
