import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionDefinitions, loadFunction } from './sql.js';

/** The statement this migration adds to `webhook_claim`, as PostgreSQL prints it (the `down` takes it out). */
const NO_FLUSH_WAIT = `  SET LOCAL synchronous_commit TO off;\n`;

/**
 * The delivery worker's claim commits without waiting for the WAL flush
 * (docs/decisions/0051-webhook-claim-without-flush-wait.md). On the way from the outbox to the receiver, the
 * claim's commit was the one fsync: an idle delivery waited for it before signing and POSTing. A claim lost by a
 * server crash only sends its event again (the record's fence refuses the forgotten attempt; the sweeper
 * enqueues the event), which at-least-once delivery allows.
 */
export class WebhookClaimWithoutFlushWait1763902600000 implements MigrationInterface {
  name = 'WebhookClaimWithoutFlushWait1763902600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction('webhook_claim', 'bfe312f5d095803b83fac740c5b50b926c8ebfb038e7ad0ad81d8f29752894ae'),
    );
  }

  /** The claim as it was: the function this migration left, read from the database, without the statement. */
  async down(queryRunner: QueryRunner): Promise<void> {
    const live = (await functionDefinitions((sql, params) => queryRunner.query(sql, params))).webhook_claim;
    if (!live.includes(NO_FLUSH_WAIT))
      throw new Error('webhook_claim is not the one this migration installed');
    await queryRunner.query(live.replace(NO_FLUSH_WAIT, ''));
  }
}
