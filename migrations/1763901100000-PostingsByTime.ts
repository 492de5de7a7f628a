import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Balances as of a time and statements read one account's postings by time (docs/decisions/0030). The index
 * holds (account_id, created_at, id, amount): a balance at t is the cached balance minus an index-only range scan
 * of the postings after t, and a statement page is a range scan in (created_at, id) order. It costs each posting
 * one more index entry (about 60 bytes) and one more index insert; the write path is otherwise unchanged.
 */
export class PostingsByTime1763901100000 implements MigrationInterface {
  name = 'PostingsByTime1763901100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "idx_postings_account_time" ON "postings" ("account_id", "created_at", "id", "amount")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "idx_postings_account_time"`);
  }
}
