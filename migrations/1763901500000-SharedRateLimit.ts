import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rate-limit counters shared by every API process (docs/decisions/0033-scale-out.md): one row per limit
 * and client key, counted by an atomic upsert per fixed window. UNLOGGED: not written to the WAL (cheap,
 * not replicated); a crash empties it, which only forgives the current window.
 */
export class SharedRateLimit1763901500000 implements MigrationInterface {
  name = 'SharedRateLimit1763901500000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE UNLOGGED TABLE "rate_limit_counters" (
        "key" text NOT NULL,
        "hits" integer NOT NULL,
        "reset_at" timestamptz NOT NULL,
        CONSTRAINT "PK_rate_limit_counters" PRIMARY KEY ("key")
      )`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_rate_limit_counters_reset" ON "rate_limit_counters" ("reset_at")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rate_limit_counters"`);
  }
}
