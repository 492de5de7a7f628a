import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently } from './sql.js';

/**
 * The transfer list filtered by a failure status reads one index range
 * (docs/decisions/0075-money-read-and-prune-bounds.md): before, it read the application's whole history through
 * (app_id, created_at, id) and threw away every row of another status.
 * - failure statuses: a partial index of (app_id, created_at, id) holding only them (few rows; the statuses in
 *   flight have their own partial index, and the common ACREDITADO is most of the application's index anyway);
 * Not movement type: an index of it would take one more entry on every transfer written, on the money path
 * (issue 19 measures that path; decision 0075 says why it was left).
 * Built concurrently, outside a transaction: transfers is the busiest table (decision 0070).
 */
export class TransferListFilters1763904000000 implements MigrationInterface {
  name = 'TransferListFilters1763904000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    const query = (sql: string, params?: unknown[]) => queryRunner.query(sql, params);
    await createIndexConcurrently(
      query,
      'idx_transfers_app_failed_created',
      `ON "transfers" ("app_id", "created_at", "id") WHERE "status" IN ('ERROR_DATOS', 'SIN_GARANTIA', 'ERROR_ACREDITACION')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "idx_transfers_app_failed_created"`);
  }
}
