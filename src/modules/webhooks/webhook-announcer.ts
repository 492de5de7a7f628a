import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type pg from 'pg';
import type {
  DataSource,
  EntityManager,
  EntitySubscriberInterface,
  TransactionCommitEvent,
  TransactionRollbackEvent,
} from 'typeorm';
import { MicroBatcher } from '#common/database/micro-batcher.js';
import { PG_POOL } from '#common/database/pg-pool.js';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { WEBHOOK_NOTIFY_CHANNEL } from './webhook-events.js';

/**
 * A NOTIFY payload must stay under 8,000 bytes; a notice is `<uuid>.<generation>` (about 40 bytes) and a comma, so
 * this many notices fit with room to spare.
 */
const NOTICES_PER_PAYLOAD = 150;

/**
 * One statement, one transaction: the notices' payloads, committed without waiting for the WAL flush (the notices
 * are hints; the events themselves were committed, durably, by the transaction that wrote them).
 */
const ANNOUNCE = `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, payload)
                    FROM unnest($2::text[]) AS payload`;

/** Where a transaction's notices wait for its commit (`queryRunner.data`, TypeORM's room for subscribers). */
const PENDING = 'webhookNotices';

/**
 * Tells the relay (webhook-relay.ts) about outbox events once the transaction that wrote them has committed
 * (docs/decisions/0039-announce-after-commit.md): a NOTIFY on `webhook_events` whose payload is a comma list of
 * notices (`eventNotice`), sent in a transaction of its own. Not a NOTIFY inside the writing transaction: PostgreSQL takes one lock
 * for the whole cluster when such a transaction commits and holds it through its WAL flush, so concurrent writers
 * (the transfer groups) would commit one after the other.
 *
 * - `announce` is for callers whose write has committed (a money function's answer has come back); concurrent
 *   announcements share one statement (a MicroBatcher, one call at a time).
 * - `afterCommit` is for writers inside a TypeORM transaction (`WebhooksService.emit`): the notices are kept on
 *   the transaction's query runner and announced when it commits, dropped when it rolls back.
 * - A lost announcement (the process dies after the commit, the database does not answer) loses no event: the
 *   relay's sweeper enqueues pending events that no job holds, after its grace period. Failures are logged with
 *   counts only.
 */
@Injectable()
export class WebhookAnnouncer implements EntitySubscriberInterface {
  private readonly batcher: MicroBatcher<string, void>;

  constructor(
    @Inject(PG_POOL) private readonly pool: pg.Pool,
    @InjectDataSource() dataSource: DataSource,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('WebhookAnnouncer');
    this.batcher = new MicroBatcher<string, void>({
      max: 20 * NOTICES_PER_PAYLOAD,
      concurrency: 1,
      run: async (notices) => {
        await this.send(notices);
        return notices.map(() => ({ value: undefined }));
      },
    });
    dataSource.subscribers.push(this);
  }

  /** Announces the notices of events that are committed; never throws. */
  announce(notices: readonly string[]): void {
    for (const notice of notices) void this.batcher.submit(notice).catch(() => undefined);
  }

  /**
   * Announces the notices when the manager's transaction commits; outside a transaction (the write has committed
   * already), at once.
   */
  afterCommit(manager: EntityManager, notices: readonly string[]): void {
    const runner = manager.queryRunner;
    if (!runner?.isTransactionActive) return this.announce(notices);
    const pending = (runner.data as Record<string, string[] | undefined>)[PENDING];
    if (pending) pending.push(...notices);
    else (runner.data as Record<string, string[]>)[PENDING] = [...notices];
  }

  /** TypeORM, after a COMMIT (or a savepoint's release, where the outer transaction is still open). */
  afterTransactionCommit(event: TransactionCommitEvent): void {
    const runner = event.queryRunner;
    if (runner.isTransactionActive) return;
    const data = runner.data as Record<string, string[] | undefined>;
    const pending = data[PENDING];
    if (!pending) return;
    delete data[PENDING];
    this.announce(pending);
  }

  /**
   * TypeORM, after a ROLLBACK: the events were not written. (A savepoint rolled back inside a transaction that
   * then commits leaves its notices announced: the delivery finds no such event and skips it.)
   */
  afterTransactionRollback(event: TransactionRollbackEvent): void {
    if (event.queryRunner.isTransactionActive) return;
    delete (event.queryRunner.data as Record<string, unknown>)[PENDING];
  }

  private async send(notices: readonly string[]): Promise<void> {
    const payloads: string[] = [];
    for (let start = 0; start < notices.length; start += NOTICES_PER_PAYLOAD) {
      payloads.push(notices.slice(start, start + NOTICES_PER_PAYLOAD).join(','));
    }
    try {
      await this.pool.query({
        name: 'webhook_announce',
        text: ANNOUNCE,
        values: [WEBHOOK_NOTIFY_CHANNEL, payloads],
      });
    } catch (error) {
      // The events stay pending; the relay's sweeper enqueues them after its grace period.
      this.logger.warn(
        { err: error, events: notices.length },
        'could not announce webhook events; the sweeper will',
      );
    }
  }
}
