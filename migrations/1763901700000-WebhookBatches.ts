import type { MigrationInterface, QueryRunner } from 'typeorm';
import { loadFunction } from './sql.js';

/**
 * Webhook delivery in batches whose plans cannot drift (docs/decisions/0036-webhook-batch-jobs.md):
 * - the claim and record statements become the functions `webhook_claim` and `webhook_record`
 *   (src/modules/webhooks/sql/), with sequential scans off while they run: planned on a session's first
 *   batches, while a burst made the outbox's statistics wrong, the record statement kept a hash join over a
 *   scan of the whole outbox for every batch after;
 * - one row per attempt is kept by a unique index on (event_id, attempt, started_at): `webhook_record` inserts
 *   with ON CONFLICT DO NOTHING instead of looking for the row first. It replaces `idx_webhook_attempts_event`
 *   (event_id, attempt), whose reads it serves with the same leading columns. A repeated record never wrote a
 *   second row (it looked first), so there are no duplicates to remove; should a copy of a row exist anyway
 *   (written by hand), the oldest is kept.
 */
export class WebhookBatches1763901700000 implements MigrationInterface {
  name = 'WebhookBatches1763901700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DELETE FROM "webhook_attempts" a USING "webhook_attempts" b
        WHERE a."event_id" = b."event_id" AND a."attempt" = b."attempt" AND a."started_at" = b."started_at"
          AND a."id" > b."id"`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_attempts_event_attempt_start"
         ON "webhook_attempts" ("event_id", "attempt", "started_at")`,
    );
    await queryRunner.query(`DROP INDEX "idx_webhook_attempts_event"`);
    await queryRunner.query(
      loadFunction('webhook_claim', '7c737b8e573654848abca9267761067c8d534b6afc9ca77c7511801be2ec7066'),
    );
    await queryRunner.query(
      loadFunction('webhook_record', '11c5ceb69163ef0bb7f09d0d0427b650137f867af94f9a434b7f1f6b10000451'),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION "webhook_record"(jsonb)`);
    await queryRunner.query(`DROP FUNCTION "webhook_claim"(text, integer)`);
    await queryRunner.query(
      `CREATE INDEX "idx_webhook_attempts_event" ON "webhook_attempts" ("event_id", "attempt")`,
    );
    await queryRunner.query(`DROP INDEX "UQ_webhook_attempts_event_attempt_start"`);
  }
}
