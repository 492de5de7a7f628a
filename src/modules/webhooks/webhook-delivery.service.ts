import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  OnApplicationShutdown,
  Optional,
} from '@nestjs/common';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { RepeatThrottle } from '#common/logging/repeat-throttle.js';
import type pg from 'pg';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';
import { SigningKeysService } from '#modules/auth/signing-keys.service.js';
import type { WebhookPayload } from './entities/webhook-event.entity.js';
import { tryAgain } from '#common/async/try-again.js';
import { MicroBatcher } from '#common/database/micro-batcher.js';
import { PG_POOL } from '#common/database/pg-pool.js';
import { WebhookSender, type SendResult } from './webhook-sender.js';
import { WebhookSigner } from './webhook-signer.js';
import { KeyedSlots, Slots } from './slots.js';
import { OriginTurns } from './origin-turns.js';
import { deliveryJobId } from './webhook-events.js';

/** The content type the interface shows for webhook bodies (a compact JWS). */
export const WEBHOOK_CONTENT_TYPE = 'plain/text';

/** What webhook_claim_for_delivery answers for each event it claimed. */
interface ClaimedRow {
  id: string;
  subject: string | null;
  payload: WebhookPayload;
  /** This attempt's number; with the lease, it fences the outcome (webhook_record.sql). */
  attempts: number;
  url: string | null;
  /** The receiving application, which the signature names (`webhook-app`, decision 0076). */
  app_id: string;
}

interface ClaimedEvent extends ClaimedRow {
  /**
   * performance.now() by which the lease may have run out: the claim statement was sent, plus the lease. The
   * database started the lease later than that, so the lease lasts at least until then.
   */
  leaseEndsAt: number;
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

/** A claim given back for a later turn at its origin (OriginTurns): due after `delayMs`. */
interface Postponed {
  id: string;
  attempt: number;
  delayMs: number;
}

/**
 * The claim and record batches: database functions (src/modules/webhooks/sql/webhook_claim_for_delivery.sql
 * and webhook_record.sql, which say what each guarantees), run with sequential scans off so that every input
 * row stays a primary-key probe whatever the outbox's statistics were when the session planned them
 * (docs/decisions/0036-webhook-batch-jobs.md).
 */
const CLAIM = 'SELECT * FROM webhook_claim_for_delivery($1, $2)';
const RECORD = 'SELECT * FROM webhook_record($1::jsonb)';
/**
 * Claims given back for a later turn: as giveBack (no lease, the attempt number undone, fenced on it), but due
 * after each one's delay, with a new generation for the delayed job that brings it back. An unnamed statement,
 * planned for each batch with its own size (no plan cached while the outbox looked small: decision 0036).
 */
const POSTPONE = `UPDATE webhook_events e
   SET lease_until = NULL, attempts = e.attempts - 1, generation = e.generation + 1,
       next_attempt_at = now() + i.delay_ms * interval '1 millisecond'
  FROM unnest($1::uuid[], $2::int[], $3::int[]) AS i(id, attempt, delay_ms)
 WHERE e.id = i.id AND e.status = 'pending' AND e.attempts = i.attempt AND e.lease_until IS NOT NULL
RETURNING e.id::text AS id, e.generation, i.delay_ms`;

/** Claim and record batches: how large, how many at once (each holds a pool connection while it runs). */
const BATCH = { max: 500, concurrency: 2, gather: true };
/** Fresh events per delivery job (the relay's batches). */
const FRESH_BATCH = 50;
/**
 * How much one worker process takes on, and for how long it holds a claim. Not configuration: the defaults are
 * what the service runs with; a test gives smaller ones to the constructor (WEBHOOK_DELIVERY_LIMITS).
 */
export interface DeliveryLimits {
  /**
   * Deliveries in flight, from claim to record, and POSTs among them (as many as the 200 delivery jobs of one
   * event each were), shared by every application. How many of the deliveries one origin's claims may hold is
   * `waitingPerOrigin` (and `shortWaitMs`): a receiver that hangs does not hold them all (decision 0079). A claim
   * that waited too long all the same (its lease runs short) is given back unsent (deliver), and claimed again
   * later.
   */
  readonly deliveriesInFlight: number;
  readonly postsInFlight: number;
  /**
   * POSTs in flight to one origin, taken before one of `postsInFlight`: also the sender's connections per origin,
   * so every POST started has a connection to go out on. A receiver that hangs holds at most this many of the
   * shared POST slots (until WEBHOOK_TIMEOUT_MS), and the other receivers' events go out past its backlog; without
   * it, its backlog took every shared slot, most of them waiting in the connection pool's queue, where they timed
   * out unsent yet counted as attempts (decision 0072).
   */
  readonly postsPerOrigin: number;
  /**
   * Claims that may wait for one origin's POST slots (beyond the `postsPerOrigin` POSTing), whatever the origin's
   * pace; by default twice `postsPerOrigin`. A claim beyond these waits only if the origin's recent POSTs give it
   * its slot within `shortWaitMs`; otherwise it is given back at once, uncounted, due at the turn the origin's
   * pace gives it (OriginTurns). So a receiver that hangs holds at most `postsPerOrigin + waitingPerOrigin` (192)
   * of the shared deliveries, and every other application's events are claimed past its backlog. Without it, such
   * a backlog filled them all, and the other applications' events waited about two WEBHOOK_TIMEOUT_MS for each
   * 1,000 of it (until the claims' leases ran short).
   */
  readonly waitingPerOrigin: number;
  /**
   * The wait for a POST slot that is short: beyond `waitingPerOrigin`, a claim waits only that long (a receiver
   * that answers fast takes a claimed batch at once); also the least delay of a claim given back for its turn.
   */
  readonly shortWaitMs: number;
  /** The latest a claim given back for its turn is due (±10 %): the longest a recovered receiver waits for it. */
  readonly laterMaxMs: number;
  /** The lease a claim takes, beyond WEBHOOK_TIMEOUT_MS. */
  readonly leaseExtraMs: number;
  /**
   * A claimed event is POSTed only while at least WEBHOOK_TIMEOUT_MS plus this much of its lease is left (for a
   * late timer, a slow signature); otherwise its claim is given back. Less than `leaseExtraMs`.
   */
  readonly leaseMarginMs: number;
}

export const DEFAULT_DELIVERY_LIMITS: DeliveryLimits = {
  deliveriesInFlight: 1000,
  postsInFlight: 200,
  postsPerOrigin: 64,
  waitingPerOrigin: 128,
  shortWaitMs: 1_000,
  laterMaxMs: 300_000,
  leaseExtraMs: 20_000,
  leaseMarginMs: 5_000,
};

/** Injection token for other DeliveryLimits than the defaults (no provider in the application: tests only). */
export const WEBHOOK_DELIVERY_LIMITS = Symbol('WEBHOOK_DELIVERY_LIMITS');
/** A batch statement that fails (connection terminated, deadlock, failover) is tried again after these. */
const BATCH_RETRY_DELAYS_MS = [50, 250, 1000];

/**
 * Delivers outbox events, one job per event, with the database work of many jobs batched:
 * - claim (batched): a lease (so two workers never send an event at once, and a killed worker's claim
 *   expires), per-subject order, and the payload, URL and application in the same round trip;
 * - sign the payload as a compact JWS with the current service key, POST it;
 * - record (batched): the attempt row and the event's outcome; the job completes only once its outcome
 *   is committed, so a worker killed before that loses nothing (the lease expires, the event goes again
 *   with the same Webhook-Id); then the retries and the next events of finished subjects are enqueued.
 */
@Injectable()
export class WebhookDeliveryService implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly sender: WebhookSender;
  private readonly signer = new WebhookSigner();
  readonly maxAttempts: number;
  private readonly leaseMs: number;
  /** Lease a claim must have left to be POSTed: a whole attempt and the margin. */
  private readonly leaseNeededMs: number;
  /** Claims given back in a backlog are logged once, then every 30 s with a count. */
  private readonly givenBack = new RepeatThrottle();
  private readonly claims: MicroBatcher<string, ClaimedEvent | undefined>;
  private readonly records: MicroBatcher<Attempt, DeliveryOutcome>;
  /** Claims given back for a later turn (batched: a backlog's claims come back many at once). */
  private readonly postponements: MicroBatcher<Postponed, void>;
  private readonly deliveries: Slots;
  private readonly posts: Slots;
  /** POST slots of each receiver's origin, taken before one of `posts`. */
  private readonly postsToOrigin: KeyedSlots;
  /** Which claims of an origin wait for its POST slots, and when the others are due again. */
  private readonly turns: OriginTurns;
  /** Set once the worker stops: deliveries not yet POSTing end (see deliver). */
  private stopping = false;

  constructor(
    @Inject(PG_POOL) private readonly pool: pg.Pool,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly signingKeys: SigningKeysService,
    private readonly queues: QueueFactory,
    private readonly logger: PinoLogger,
    @Optional() @Inject(WEBHOOK_DELIVERY_LIMITS) limits: Partial<DeliveryLimits> = {},
  ) {
    this.logger.setContext('WebhookDelivery');
    const { deliveriesInFlight, postsInFlight, postsPerOrigin, leaseExtraMs, leaseMarginMs, ...pacing } = {
      ...DEFAULT_DELIVERY_LIMITS,
      ...limits,
    };
    if (leaseMarginMs >= leaseExtraMs) throw new Error('the lease margin must be less than the lease extra');
    this.deliveries = new Slots(deliveriesInFlight);
    this.posts = new Slots(postsInFlight);
    this.postsToOrigin = new KeyedSlots(postsPerOrigin);
    this.turns = new OriginTurns({
      ...pacing,
      postsPerOrigin,
      waitingPerOrigin: limits.waitingPerOrigin ?? 2 * postsPerOrigin,
    });
    this.sender = new WebhookSender({
      allowPrivate: config.webhookAllowPrivateUrls,
      timeoutMs: config.webhookTimeoutMs,
      maxResponseBytes: 64 * 1024,
      connectionsPerOrigin: postsPerOrigin,
    });
    this.maxAttempts = config.webhookRetryDelaysMs.length + 1;
    this.leaseMs = config.webhookTimeoutMs + leaseExtraMs;
    this.leaseNeededMs = config.webhookTimeoutMs + leaseMarginMs;
    this.claims = new MicroBatcher({ ...BATCH, run: async (ids) => settled(await this.claimBatch(ids)) });
    this.records = new MicroBatcher({
      ...BATCH,
      run: async (attempts) => settled(await this.recordBatch(attempts)),
    });
    this.postponements = new MicroBatcher({
      ...BATCH,
      run: async (claims) => settled(await this.postponeBatch(claims)),
    });
  }

  /** Before any consumer closes (they wait for their jobs): deliveries not yet POSTing end now. */
  beforeApplicationShutdown(): void {
    this.stopping = true;
  }

  /**
   * The consumers stop first (they wait for the jobs they run, whose POSTs need the connection pool and
   * whose signatures need the signing thread), then the pool and the thread close.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.queues.closeWorkers();
    await Promise.all([this.sender.close(), this.signer.close()]);
  }

  /**
   * One event's delivery: claim (batched), sign and POST, record (batched). In this process at most
   * `deliveriesInFlight` deliveries run at once, whatever the jobs that asked for them (a batch job asks for
   * up to FRESH_BATCH), and at most `postsInFlight` of them POST, at most `postsPerOrigin` to one origin (as
   * many as its connections): the claims and records of many jobs batch together, a POST never waits for a
   * connection, and a receiver that hangs holds no more of the shared POST slots than its own connections.
   *
   * Once the worker is stopping, only the POSTs already started finish (as when each delivery was a job): an
   * event not yet claimed is skipped, and one claimed but not yet sent is given back (its lease and attempt
   * number undone). Either stays pending, and the sweeper of a running worker enqueues it again.
   *
   * A claim waits for its origin's POST slot only if few claims wait there, or if the origin answers fast enough
   * that it would soon get one (OriginTurns): otherwise it is given back at once, uncounted, due at the turn the
   * origin's pace gives it. So a receiver that hangs holds few of the shared deliveries, and the other
   * applications' events are claimed and sent past its backlog (decision 0079).
   *
   * A claim is POSTed only while its lease outlasts a whole attempt (`leaseNeededMs`): one that waited for its
   * slot behind receivers that hang until the timeout may have too little left, and once the lease runs out
   * another worker's claim (the sweeper's job) would send the event while this POST still runs. Such a claim
   * is given back too, unsent and with no attempt counted; the sweeper enqueues it again. The check is a clock
   * read: no statement while the lease is intact.
   */
  async deliver(eventId: string): Promise<DeliveryOutcome> {
    await this.deliveries.acquire();
    try {
      if (this.stopping) return 'skipped';
      const event = await this.claims.submit(eventId);
      if (!event) return 'skipped';
      const origin = event.url === null ? undefined : this.sender.origin(event.url);
      const laterMs = origin === undefined ? undefined : this.turns.admit(origin, performance.now());
      if (laterMs !== undefined) {
        await this.postponements.submit({ id: event.id, attempt: event.attempts, delayMs: laterMs });
        return 'skipped';
      }
      let attempt: Attempt | undefined;
      try {
        attempt = await this.signAndSend(event, origin);
      } catch (error) {
        // Nothing was POSTed (signing failed: the key file unreadable, the signing thread gone): the claim goes
        // back uncounted, as for a stopping worker, instead of holding its lease and an attempt until it ran out.
        await this.giveBack(event);
        throw error;
      } finally {
        if (origin !== undefined) this.turns.done(origin);
      }
      if (!attempt) {
        await this.giveBack(event);
        return 'skipped';
      }
      return await this.records.submit(attempt);
    } finally {
      this.deliveries.release();
    }
  }

  /** Signs a claimed event and POSTs it when a slot frees: the attempt, or undefined when it was not sent. */
  private async signAndSend(event: ClaimedEvent, origin: string | undefined): Promise<Attempt | undefined> {
    // Signed before the wait for a POST slot: a claimed batch's signatures, asked for in one turn of the
    // loop, go to the signing thread as one message (asked for as slots free up, they went one by one).
    // The attempt's Webhook-Timestamp is the signing time: the signature covers it (SignedAttempt).
    const timestamp = Math.floor(Date.now() / 1000);
    const body = event.url
      ? this.signer.sign(await this.signingKeys.current(), event.payload, {
          id: event.id,
          timestamp,
          app: event.app_id,
        })
      : undefined;
    body?.catch(() => undefined); // its failure is the attempt's, below (not an unhandled rejection meanwhile)
    return this.withPostSlot(origin, async () => {
      if (this.stopping) return undefined;
      const signed = await body;
      const leaseLeftMs = event.leaseEndsAt - performance.now();
      if (leaseLeftMs >= this.leaseNeededMs) return await this.attempt(event, origin, signed, timestamp);
      this.reportGivenBack(event, leaseLeftMs);
      return undefined;
    });
  }

  /**
   * Runs `post` holding a slot of the URL's origin and then one of the shared POST slots. The origin's slot comes
   * first: while a receiver's backlog waits for it, the shared slots stay free for every other receiver. A claim
   * without a usable URL (none set, or one the sender refuses: no origin) connects nowhere and takes no origin's
   * slot.
   */
  private async withPostSlot<T>(origin: string | undefined, post: () => Promise<T>): Promise<T> {
    if (origin !== undefined) await this.postsToOrigin.acquire(origin);
    try {
      await this.posts.acquire();
      try {
        return await post();
      } finally {
        this.posts.release();
      }
    } finally {
      if (origin !== undefined) this.postsToOrigin.release(origin);
    }
  }

  /**
   * Undoes a claim whose POST never started: no lease, the attempt number as it was, due now (last_attempt_at
   * needs nothing: the record sets it, not the claim; decision 0095). Fenced on the attempt number, like the
   * record: a claim taken over meanwhile is left alone. Should the statement fail, the lease runs out instead (the
   * attempt number stays one ahead, as after a killed worker).
   */
  private async giveBack(event: ClaimedEvent): Promise<void> {
    await this.pool
      .query(
        `UPDATE webhook_events SET lease_until = NULL, attempts = attempts - 1, next_attempt_at = now()
          WHERE id = $1 AND status = 'pending' AND attempts = $2 AND lease_until IS NOT NULL`,
        [event.id, event.attempts],
      )
      .catch((error: unknown) =>
        this.logger.warn(
          { err: error, eventId: event.id },
          'could not give a webhook claim back; its lease will run out',
        ),
      );
  }

  /** A claim that waited too long for its POST slot: logged (ids and times only), once per 30 s with a count. */
  private reportGivenBack(event: ClaimedEvent, leaseLeftMs: number): void {
    this.givenBack.report('lease', (fields) =>
      this.logger.warn(
        { eventId: event.id, attempt: event.attempts, leaseLeftMs: Math.round(leaseLeftMs), ...fields },
        'webhook claim waited too long for a POST slot to send within its lease; given back for a later claim',
      ),
    );
  }

  /** POSTs a claimed event's signed body (signed at `timestamp`, in seconds): the attempt to record. */
  private async attempt(
    event: ClaimedEvent,
    origin: string | undefined,
    signed: string | undefined,
    timestamp: number,
  ): Promise<Attempt> {
    const startedAtMs = Date.now();
    let result: SendResult;
    if (!event.url || signed === undefined) {
      result = { error: 'no webhook URL is configured for the application', durationMs: 0 };
    } else {
      // The origin's pace (OriginTurns) is measured here, on the POSTs it really got.
      const posting = origin === undefined ? undefined : this.turns.posting(origin, performance.now());
      try {
        result = await this.sender.send(event.url, signed, {
          'Content-Type': WEBHOOK_CONTENT_TYPE,
          'Webhook-Id': event.id,
          'Webhook-Timestamp': String(timestamp),
          'User-Agent': 'wallet-webhooks/1',
        });
      } finally {
        if (origin !== undefined && posting !== undefined)
          this.turns.posted(origin, posting, performance.now());
      }
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
    return {
      id: event.id,
      attempt: event.attempts,
      url: event.url === null ? null : recordedUrl(event.url),
      startedAtMs,
      durationMs: result.durationMs,
      statusCode: result.statusCode ?? null,
      delivered,
      error,
      retryDelayMs,
    };
  }

  /** The events of one batch job, each delivered as its own job would be; counts of each outcome. */
  async deliverAll(eventIds: readonly string[]): Promise<Partial<Record<DeliveryOutcome, number>>> {
    // Every delivery ends before the job does (a failed one fails the job, whose events stay pending).
    const settled = await Promise.allSettled(eventIds.map((id) => this.deliver(id)));
    const counts: Partial<Record<DeliveryOutcome, number>> = {};
    for (const one of settled) {
      if (one.status === 'rejected') throw one.reason;
      counts[one.value] = (counts[one.value] ?? 0) + 1;
    }
    return counts;
  }

  /**
   * Fresh events, as the relay gets their notices: one job per `FRESH_BATCH` of them (job id
   * `<first event id>.<its generation>+<count>`, so a relay repeating the same notices adds nothing).
   */
  async enqueueFresh(events: readonly { eventId: string; generation: number }[]): Promise<void> {
    if (events.length === 0) return;
    const jobs = [];
    for (let start = 0; start < events.length; start += FRESH_BATCH) {
      const batch = events.slice(start, start + FRESH_BATCH);
      jobs.push({
        name: JOBS.deliverWebhooks,
        data: { events: batch.map((event) => event.eventId) },
        opts: { jobId: `${deliveryJobId(batch[0].eventId, batch[0].generation)}+${batch.length}` },
      });
    }
    await this.queues.queue(QUEUES.webhooks).addBulk(jobs);
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
    // Before the statement (and its retries): the leases it takes start later, so they last at least this long.
    const leaseEndsAt = performance.now() + this.leaseMs;
    const rows = await this.batchQuery<ClaimedRow>('claim', CLAIM, [ids.join(','), this.leaseMs]);
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.map((id) => {
      const row = byId.get(id);
      byId.delete(id);
      return row && { ...row, leaseEndsAt };
    });
  }

  /**
   * Gives claims back for a later turn (POSTPONE), then adds their delayed jobs in one round trip. Should the
   * statement fail, their leases run out instead (as giveBack's); should the jobs not be added, the sweeper
   * enqueues the events once they are overdue. Logged once per 30 s with a count (ids and delays only).
   */
  private async postponeBatch(claims: Postponed[]): Promise<void[]> {
    const done = claims.map(() => undefined);
    let due: FollowUp[];
    try {
      due = (
        await this.pool.query<FollowUp>(POSTPONE, [
          claims.map((claim) => claim.id),
          claims.map((claim) => claim.attempt),
          claims.map((claim) => claim.delayMs),
        ])
      ).rows;
    } catch (error) {
      this.logger.warn(
        { err: error, claims: claims.length, firstEventId: claims[0].id },
        'could not give webhook claims back for a later turn; their leases will run out',
      );
      return done;
    }
    this.givenBack.report('turn', (fields) =>
      this.logger.info(
        { eventId: claims[0].id, delayMs: claims[0].delayMs, claims: claims.length, ...fields },
        "webhook claims given back for a later turn: their receiver's origin has enough claims waiting",
      ),
    );
    await this.enqueueMany(
      due.map((row) => ({ eventId: row.id, generation: row.generation, delayMs: row.delay_ms })),
    ).catch((error: unknown) =>
      this.logger.warn({ err: error, jobs: due.length }, 'could not enqueue webhook claims given back'),
    );
    return done;
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
   * A batch call, tried again a few times (webhook_claim_for_delivery.sql and webhook_record.sql say why that is
   * safe), as a named statement on the pool's connections (parsed once per connection).
   */
  private async batchQuery<T>(what: 'claim' | 'record', sql: string, parameters: unknown[]): Promise<T[]> {
    const run = async () =>
      (
        await this.pool.query<T & pg.QueryResultRow>({
          name: `webhook-${what}`,
          text: sql,
          values: parameters,
        })
      ).rows;
    return tryAgain(run, BATCH_RETRY_DELAYS_MS, (error, attempt) => {
      this.logger.warn({ err: error, attempt }, `webhook ${what} batch failed; trying again`);
      return true;
    });
  }
}

/** Every item of a batch answered with its value. */
/**
 * The receiver's address as an attempt records it: origin and path. A query string may carry the receiver's own
 * token (`?token=…`), which would outlive its rotation by `apps set-webhook` in every attempt row.
 */
export function recordedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return url.split(/[?#]/)[0];
  }
}

function settled<O>(values: O[]): { value: O }[] {
  return values.map((value) => ({ value }));
}
