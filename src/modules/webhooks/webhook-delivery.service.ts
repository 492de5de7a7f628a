import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { CompactSign } from 'jose';
import { PinoLogger } from 'nestjs-pino';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { JOBS, QUEUES } from '../../common/queue/queue-names.js';
import { QueueFactory } from '../../common/queue/queue.factory.js';
import { SigningKeysService } from '../auth/signing-keys.service.js';
import type { WebhookPayload } from './entities/webhook-event.entity.js';
import { WebhookSender, type SendResult } from './webhook-sender.js';
import { deliveryJobId } from './webhook-events.js';

/** The content type the interface shows for webhook bodies (a compact JWS). */
export const WEBHOOK_CONTENT_TYPE = 'plain/text';

interface ClaimedEvent {
  id: string;
  app_id: string;
  subject: string | null;
  payload: WebhookPayload;
  attempts: number;
  url: string | null;
}

export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed' | 'skipped';

/**
 * Delivers one outbox event: claims it with a lease (so two workers never send
 * it at once, and a killed worker's claim expires), keeps per-subject order,
 * signs the payload as a compact JWS with the current service key, POSTs it,
 * records the attempt and decides: delivered, retry later, or failed.
 */
@Injectable()
export class WebhookDeliveryService implements OnModuleDestroy {
  private readonly sender: WebhookSender;
  readonly maxAttempts: number;
  private readonly leaseMs: number;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
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
  }

  onModuleDestroy(): void {
    this.sender.close();
  }

  async deliver(eventId: string): Promise<DeliveryOutcome> {
    const event = await this.claim(eventId);
    if (!event) {
      await this.parkIfBlocked(eventId);
      return 'skipped';
    }
    const startedAt = new Date();
    let result: SendResult;
    if (!event.url) {
      result = { error: 'no webhook URL is configured for the application', durationMs: 0 };
    } else {
      const body = await this.sign(event.payload);
      result = await this.sender.send(event.url, body, {
        'Content-Type': WEBHOOK_CONTENT_TYPE,
        'Webhook-Id': event.id,
        'Webhook-Timestamp': String(Math.floor(Date.now() / 1000)),
        'User-Agent': 'wallet-webhooks/1',
      });
    }
    const delivered = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    const error = delivered ? null : (result.error ?? `HTTP ${result.statusCode}`);
    await this.dataSource.query(
      `INSERT INTO webhook_attempts (event_id, attempt, url, started_at, duration_ms, status_code, outcome, error)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        event.id,
        event.attempts,
        event.url,
        startedAt,
        result.durationMs,
        result.statusCode ?? null,
        delivered ? 'delivered' : 'failed',
        error,
      ],
    );
    this.logger.info(
      {
        eventId: event.id,
        attempt: event.attempts,
        statusCode: result.statusCode,
        ms: result.durationMs,
        error,
      },
      delivered ? 'webhook delivered' : 'webhook attempt failed',
    );
    if (delivered) {
      await this.dataSource.query(
        `UPDATE webhook_events SET status = 'delivered', delivered_at = now(), lease_until = NULL,
                next_attempt_at = NULL, last_error = NULL WHERE id = $1`,
        [event.id],
      );
      await this.wakeNext(event);
      return 'delivered';
    }
    if (event.attempts >= this.maxAttempts) {
      await this.dataSource.query(
        `UPDATE webhook_events SET status = 'failed', lease_until = NULL, next_attempt_at = NULL, last_error = $2
          WHERE id = $1`,
        [event.id, error],
      );
      await this.wakeNext(event);
      return 'failed';
    }
    const delayMs = this.retryDelay(event.attempts, result.retryAfterMs);
    const [rows] = (await this.dataSource.query(
      `UPDATE webhook_events
          SET lease_until = NULL, last_error = $2, generation = generation + 1,
              next_attempt_at = now() + ($3::int * interval '1 millisecond')
        WHERE id = $1 RETURNING generation`,
      [event.id, error, delayMs],
    )) as [{ generation: number }[], number];
    await this.enqueue(event.id, rows[0].generation, delayMs);
    return 'retrying';
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

  private async sign(payload: WebhookPayload): Promise<string> {
    const key = await this.signingKeys.current();
    return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'JWT' })
      .sign(key.privateKey);
  }

  /** Takes the event if it is pending, due, not held by another worker, and first of its subject. */
  private async claim(eventId: string): Promise<ClaimedEvent | undefined> {
    const [rows] = (await this.dataSource.query(
      `UPDATE webhook_events e
          SET lease_until = now() + ($2::int * interval '1 millisecond'),
              attempts = attempts + 1, last_attempt_at = now()
        WHERE e.id = $1 AND e.status = 'pending'
          AND (e.lease_until IS NULL OR e.lease_until < now())
          AND (e.next_attempt_at IS NULL OR e.next_attempt_at <= now() + interval '50 milliseconds')
          AND NOT EXISTS (
            SELECT 1 FROM webhook_events p
             WHERE p.app_id = e.app_id AND p.subject = e.subject AND p.status = 'pending' AND p.seq < e.seq)
      RETURNING e.id, e.app_id, e.subject, e.payload, e.attempts,
                (SELECT a.webhook_url FROM applications a WHERE a.id = e.app_id) AS url`,
      [eventId, this.leaseMs],
    )) as [ClaimedEvent[], number];
    return rows[0];
  }

  /** An event that waits for an earlier one of its subject sleeps until that one is done (wakeNext). */
  private async parkIfBlocked(eventId: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE webhook_events e SET next_attempt_at = NULL
        WHERE e.id = $1 AND e.status = 'pending' AND (e.lease_until IS NULL OR e.lease_until < now())
          AND EXISTS (
            SELECT 1 FROM webhook_events p
             WHERE p.app_id = e.app_id AND p.subject = e.subject AND p.status = 'pending' AND p.seq < e.seq)`,
      [eventId],
    );
  }

  /** After an event is done, schedules the next pending event of the same subject. */
  private async wakeNext(event: ClaimedEvent): Promise<void> {
    if (event.subject === null) return;
    const [rows] = (await this.dataSource.query(
      `UPDATE webhook_events SET next_attempt_at = now(), generation = generation + 1
        WHERE id = (SELECT id FROM webhook_events
                     WHERE app_id = $1 AND subject = $2 AND status = 'pending' ORDER BY seq LIMIT 1)
          AND (lease_until IS NULL OR lease_until < now())
          AND (next_attempt_at IS NULL OR next_attempt_at <= now())
      RETURNING id, generation`,
      [event.app_id, event.subject],
    )) as [{ id: string; generation: number }[], number];
    if (rows[0]) await this.enqueue(rows[0].id, rows[0].generation);
  }
}
