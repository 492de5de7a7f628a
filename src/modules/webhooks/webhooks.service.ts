import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { ApplicationEntity } from '#modules/apps/entities/application.entity.js';
import { auditAppend, type AuditActor } from '#modules/audit/audit-trail.js';
import { WebhookAttemptEntity } from './entities/webhook-attempt.entity.js';
import { WebhookEventEntity, type WebhookEventStatus } from './entities/webhook-event.entity.js';
import { WEBHOOK_EVENTS, WEBHOOK_NOTIFY_CHANNEL, type WebhookEventName } from './webhook-events.js';
import { UUID_PATTERN } from '#common/ids/uuid.js';

/** The most events `webhooks list` prints at once. */
export const MAX_LISTED_EVENTS = 1000;

export interface EmitInput {
  appId: string;
  event: WebhookEventName;
  /** Events of one subject reach the receiver in the order they were emitted. */
  subject?: string;
  data: Record<string, unknown>;
}

export interface EventView {
  eventId: string;
  appId: string;
  event: string;
  subject: string | null;
  status: WebhookEventStatus;
  attempts: number;
  replays: number;
  createdAt: string;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  lastError: string | null;
  payload: WebhookEventEntity['payload'];
  deliveries: {
    attempt: number;
    startedAt: string;
    durationMs: number;
    statusCode: number | null;
    outcome: string;
    error: string | null;
  }[];
}

/**
 * The outbox's producer side. `emit` writes the event with the caller's
 * transaction manager, so the event exists exactly when the change commits;
 * producers never touch the queue (the relay does, after commit).
 */
@Injectable()
export class WebhooksService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The event's id is time-ordered (uuidv7(), as the money path's events: decisions 0042, 0050). */
  async emit(manager: EntityManager, input: EmitInput): Promise<string> {
    const payload = { event: input.event, timestamp: Math.floor(Date.now() / 1000), data: input.data };
    const [{ id }] = await manager.query<{ id: string }[]>(
      `INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
       VALUES (uuidv7(), $1, $2, $3, $4, 'pending', now())
       RETURNING id::text AS id`,
      [input.appId, input.event, input.subject ?? null, JSON.stringify(payload)],
    );
    return id;
  }

  /**
   * Queues a `webhook_test` event so an integrator can try a receiver before any money moves; recorded in the
   * audit trail as `actor`'s (decision 0032).
   */
  async sendTest(appId: string, actor: AuditActor): Promise<{ eventId: string }> {
    const eventId = await this.dataSource.transaction(async (manager) => {
      if (!UUID_PATTERN.test(appId) || !(await manager.existsBy(ApplicationEntity, { id: appId }))) {
        throw new NotFoundError(appId, 'Application not found');
      }
      const id = await this.emit(manager, {
        appId,
        event: WEBHOOK_EVENTS.test,
        data: { message: 'Test webhook from the wallet service: your receiver is reachable and verifies.' },
      });
      await auditAppend(
        manager,
        { ...actor, appId },
        { resourceType: 'webhook_event', resourceId: id, outcome: 'created' },
      );
      return id;
    });
    return { eventId };
  }

  async list(filter: { appId?: string; status?: string; limit?: number }): Promise<EventView[]> {
    if (filter.appId !== undefined && !UUID_PATTERN.test(filter.appId)) {
      throw ValidationFailedError.single('appId', 'invalid', 'appId must be a uuid');
    }
    if (filter.status !== undefined && !['pending', 'delivered', 'failed'].includes(filter.status)) {
      throw ValidationFailedError.single('status', 'invalid', 'status must be pending, delivered or failed');
    }
    const events = await this.dataSource.getRepository(WebhookEventEntity).find({
      where: {
        ...(filter.appId ? { appId: filter.appId } : {}),
        ...(filter.status ? { status: filter.status as WebhookEventStatus } : {}),
      },
      order: { seq: 'DESC' },
      take: Math.min(filter.limit ?? 100, MAX_LISTED_EVENTS),
    });
    const attempts = events.length
      ? await this.dataSource
          .getRepository(WebhookAttemptEntity)
          .createQueryBuilder('a')
          .where('a.event_id IN (:...ids)', { ids: events.map((event) => event.id) })
          .orderBy('a.started_at', 'ASC')
          .addOrderBy('a.id', 'ASC')
          .getMany()
      : [];
    return events.map((event) => ({
      eventId: event.id,
      appId: event.appId,
      event: event.event,
      subject: event.subject,
      status: event.status,
      attempts: event.attempts,
      replays: event.replays,
      createdAt: event.createdAt.toISOString(),
      nextAttemptAt: event.nextAttemptAt?.toISOString() ?? null,
      deliveredAt: event.deliveredAt?.toISOString() ?? null,
      lastError: event.lastError,
      payload: event.payload,
      deliveries: attempts
        .filter((attempt) => attempt.eventId === event.id)
        .map((attempt) => ({
          attempt: attempt.attempt,
          startedAt: attempt.startedAt.toISOString(),
          durationMs: attempt.durationMs,
          statusCode: attempt.statusCode,
          outcome: attempt.outcome,
          error: attempt.error,
        })),
    }));
  }

  /** Sends an event again (failed or already delivered), with the same Webhook-Id and a fresh set of attempts. */
  /**
   * Delivers a delivered or failed event again (same Webhook-Id), recorded in the audit trail as `actor`'s, for
   * the event's application (decision 0032).
   */
  async replay(eventId: string, actor: AuditActor): Promise<{ eventId: string; status: 'pending' }> {
    if (!UUID_PATTERN.test(eventId))
      throw ValidationFailedError.single('eventId', 'invalid', 'eventId must be a uuid');
    await this.dataSource.transaction(async (manager) => {
      const rows = (await manager.query(
        `UPDATE webhook_events
            SET status = 'pending', attempts = 0, replays = replays + 1, generation = generation + 1,
                next_attempt_at = now(), lease_until = NULL, last_error = NULL, delivered_at = NULL
          WHERE id = $1 AND status <> 'pending'
          RETURNING generation, app_id`,
        [eventId],
      )) as [{ generation: number; app_id: string }[], number];
      const updated = rows[0];
      if (updated.length === 0) {
        const exists = await manager.existsBy(WebhookEventEntity, { id: eventId });
        if (!exists) throw new NotFoundError(eventId, 'Webhook event not found');
        throw ValidationFailedError.single('eventId', 'invalid', 'the event is still pending delivery');
      }
      await auditAppend(
        manager,
        { ...actor, appId: updated[0].app_id },
        { resourceType: 'webhook_event', resourceId: eventId, outcome: 'replayed' },
      );
      await manager.query('SELECT pg_notify($1, $2)', [
        WEBHOOK_NOTIFY_CHANNEL,
        `${eventId}.${updated[0].generation}`,
      ]);
    });
    return { eventId, status: 'pending' };
  }
}
