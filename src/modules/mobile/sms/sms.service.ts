import { placeFreesSql } from '#common/database/sql.js';
import { createHash, randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { handOver } from '#common/queue/hand-over.js';
import { DataSource, type EntityManager, type FindOptionsWhere } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { tenantWhere } from '#common/auth/tenancy.js';
import { TooManyRequestsError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { SmsMessageEntity } from '../entities/sms-message.entity.js';
import { SmsQueue } from './sms-queue.js';
import { SmsRouting } from './sms-routing.js';
import { SMS_STATUS } from './sms-status.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';
import { ADVISORY_LOCKS, lockUntilCommit } from '#common/database/advisory-locks.js';
import { currentTransactionId, transactionCommitted } from '#common/database/transaction-fate.js';
import { checkIdempotencyKey } from '#common/http/idempotency-key.js';

/** What GET /mobile/sms/{uuid} reports: all strings, '' where nothing is known yet. */
export type SmsStatusView =
  | {
      status: string;
      delivery_time: string;
      mccmnc: string;
      error_code: string;
      system_delivery_time: string;
    }
  | { status: 'UNKNOWN'; delivery_time: ''; mccmnc: '' };

/**
 * Accepts SMS for sending (route check, rate limits, one row per message,
 * one queue job) and reports their status to the application, or to the user
 * whose token sent them. Submission to the provider happens in the worker.
 */
@Injectable()
export class SmsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly routing: SmsRouting,
    private readonly queue: SmsQueue,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('SmsService');
  }

  /**
   * With an Idempotency-Key (decision 0103), the key is claimed first, in the message's transaction: a retry of a
   * committed send answers its message_id and sends nothing (nor counts against the limits); a twin in flight waits
   * on the key's row until the first commits (then the same) or rolls back (then it runs); the key used with
   * another message is a 400. A refusal (a limit included) rolls the claim back: no key is stored.
   */
  async send(
    principal: Principal,
    input: { dnis: string; message: string },
    idempotencyKey?: string,
  ): Promise<{ messageId: string }> {
    checkIdempotencyKey(idempotencyKey);
    if (!this.routing.routable(input.dnis)) {
      throw ValidationFailedError.single('dnis', 'invalid', 'no route to the destination');
    }
    const messageId = randomUUID();
    // The transaction's id once the message is written, to ask after a failure whether it committed (txid_status).
    let xid: string | undefined;
    // The message_id a stored Idempotency-Key answers: nothing is written or sent.
    let replayed: string | undefined;
    try {
      await this.dataSource.transaction(async (manager) => {
        if (idempotencyKey !== undefined) {
          replayed = await this.claimKey(manager, principal, idempotencyKey, input, messageId);
          if (replayed !== undefined) return;
        }
        await this.checkRateLimits(manager, principal, input.dnis);
        await manager.insert(SmsMessageEntity, {
          id: messageId,
          appId: principal.appId,
          senderSubject: principal.kind === 'subject' ? principal.subject : null,
          dnis: input.dnis,
          body: input.message,
          status: SMS_STATUS.queued,
        });
        await auditAppend(manager, requestActor(principal), {
          resourceType: 'sms',
          resourceId: messageId,
          outcome: 'created',
        });
        xid = await currentTransactionId(manager);
      });
    } catch (error) {
      // A COMMIT whose answer was lost (the connection cut while or after the server committed) throws too, and the
      // sweeper would send the stored message while the client, told 503, sends another (decision 0089). Its fate
      // is asked for: committed, the message is accepted as any other. A failure before the last statement (a
      // refusal by a limit included) left no xid: nothing was written, and nothing is asked.
      if ((await transactionCommitted(this.dataSource, xid)) !== true) throw error;
      this.logger.warn({ messageId }, 'SMS stored although its commit failed to answer');
    }
    if (replayed !== undefined) {
      this.logger.info(
        { messageId: replayed, appId: principal.appId },
        'SMS answered from its Idempotency-Key',
      );
      return { messageId: replayed };
    }
    // The message is stored as QUEUED: should this hand-over fail or be late, the worker's sweeper enqueues it.
    await handOver(() => this.queue.enqueueSubmit(messageId), this.logger, 'an SMS', { messageId });
    this.logger.info({ messageId, appId: principal.appId }, 'SMS accepted');
    return { messageId };
  }

  /**
   * Claims an Idempotency-Key in `idempotency_keys` (the transfers' store and hourly pruner, decision 0013) with
   * its answer, or answers the message_id it already holds. The stored key is `sms <key>`, and `sms <key> <subject>`
   * for a user token: a client's key has no space, so it never meets a transfer's, a reversal's or a rail
   * reference's key, and another user's (or the application's own) same key is its own. The hash is the message's.
   */
  private async claimKey(
    manager: EntityManager,
    principal: Principal,
    idempotencyKey: string,
    input: { dnis: string; message: string },
    messageId: string,
  ): Promise<string | undefined> {
    const appId = principal.appId;
    const key = `sms ${idempotencyKey}${principal.kind === 'subject' ? ` ${principal.subject}` : ''}`;
    const hash = createHash('sha256')
      .update(JSON.stringify([input.dnis, input.message]))
      .digest('hex');
    // Twice at most: a key that conflicted and was gone when read was pruned between the two statements.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      // Waits on the key's row while a twin holds it uncommitted.
      const claimed = (await manager.query(
        `INSERT INTO idempotency_keys (app_id, key, request_hash, response_status, response_body)
         VALUES ($1, $2, $3, 200, $4) ON CONFLICT DO NOTHING RETURNING key`,
        [appId, key, hash, JSON.stringify({ message_id: messageId })],
      )) as unknown[];
      if (claimed.length > 0) return undefined;
      const [stored] = (await manager.query(
        `SELECT request_hash, response_body FROM idempotency_keys WHERE app_id = $1 AND key = $2`,
        [appId, key],
      )) as { request_hash: string; response_body: { message_id: string } }[];
      if (stored === undefined) continue;
      if (stored.request_hash === hash) return stored.response_body.message_id;
      this.logger.info({ appId }, 'SMS refused: its Idempotency-Key was used with another message');
      throw ValidationFailedError.single(
        'Idempotency-Key',
        'invalid',
        'this Idempotency-Key was used with a different request',
      );
    }
    throw new Error('an Idempotency-Key conflicted twice and was gone each time');
  }

  /** The status of a message the caller may see; UNKNOWN for any other id (another application's included). */
  async status(principal: Principal, messageId: string): Promise<SmsStatusView> {
    const where = tenantWhere<SmsMessageEntity>(principal, ['senderSubject']).map(
      (clause) => ({ ...clause, id: messageId }) as FindOptionsWhere<SmsMessageEntity>,
    );
    const message = await this.dataSource.getRepository(SmsMessageEntity).findOne({ where });
    if (!message) return { status: SMS_STATUS.unknown, delivery_time: '', mccmnc: '' };
    return {
      status: message.status,
      delivery_time: message.deliveryTime?.toISOString() ?? '',
      mccmnc: message.mccmnc ?? '',
      error_code: message.errorCode ?? '',
      system_delivery_time: message.systemDeliveryTime?.toISOString() ?? '',
    };
  }

  /**
   * Per application (a minute and a day), per destination of the application (an hour) and, for a user token,
   * per user (an hour: one user cannot use up the application's allowance, which its one-time codes need),
   * counted on the stored messages under a per-application advisory lock, so every API process sees the same
   * counts. A refusal's Retry-After is when a place frees in every limit reached (decision 0058).
   */
  private async checkRateLimits(manager: EntityManager, principal: Principal, dnis: string): Promise<void> {
    const limits = this.config.mobile;
    const appId = principal.appId;
    const subject = principal.kind === 'subject' ? principal.subject : null;
    await lockUntilCommit(manager, ADVISORY_LOCKS.smsRateLimit, appId);
    const [frees] = (await manager.query(
      `SELECT
         ${placeFrees('app_id = $1', '1 minute', '$3')} AS minute,
         ${placeFrees('app_id = $1', '1 day', '$4')} AS day,
         ${placeFrees('app_id = $1 AND dnis = $2', '1 hour', '$5')} AS destination,
         ${placeFrees('app_id = $1 AND sender_subject = $6::uuid AND sender_subject IS NOT NULL', '1 hour', '$7')} AS "user"`,
      [
        appId,
        dnis,
        limits.smsAppLimitPerMinute,
        limits.smsAppLimitPerDay,
        limits.smsDestinationLimitPerHour,
        subject,
        limits.smsUserLimitPerHour,
      ],
    )) as { minute: number | null; day: number | null; destination: number | null; user: number | null }[];
    const reached = (
      [
        ['application per minute', frees.minute],
        ['application per day', frees.day],
        ['destination per hour', frees.destination],
        ['user per hour', frees.user],
      ] as const
    ).flatMap(([limit, seconds]) => (seconds === null ? [] : [{ limit, seconds }]));
    if (reached.length > 0) {
      const { limit } = reached[0];
      this.logger.info({ appId, limit }, 'SMS refused by a rate limit');
      // The request passes once every limit it reached has a place.
      const seconds = Math.max(1, ...reached.map((each) => each.seconds));
      throw new TooManyRequestsError(`SMS rate limit exceeded (${limit})`, seconds);
    }
  }
}

/** placeFreesSql over the stored messages. */
const placeFrees = (where: string, window: string, limit: string): string =>
  placeFreesSql('sms_messages', where, window, limit);
