import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A posting's created_at becomes the moment it is inserted (clock_timestamp()) instead of the start of its
 * transaction (now()). Postings of one wallet account are inserted under that account's ledger row lock, so
 * insert times follow the order in which the funds checks ran: a statement's running balance (decision 0030),
 * ordered by (created_at, id), then never dips below zero where the ledger did not. With now(), a transaction
 * that started first but took the lock second was listed first (found by the reversals race, decision 0031).
 * Existing rows keep their times.
 */
export class PostingsAtInsert1763901350000 implements MigrationInterface {
  name = 'PostingsAtInsert1763901350000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "postings" ALTER COLUMN "created_at" SET DEFAULT clock_timestamp()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "postings" ALTER COLUMN "created_at" SET DEFAULT now()`);
  }
}
