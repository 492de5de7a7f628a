import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently } from './sql.js';

/**
 * The reaper of document bytes that no row names (decision 0055) asks, for a batch of stored keys, which ones a
 * document row names: a unique index on `storage_key` answers with one probe per key (the column was read by id
 * only until now). Unique, as every upload writes its own key. Built concurrently, outside a transaction: uploads
 * go on meanwhile (decision 0070).
 */
export class DocumentStorageKeys1763903100000 implements MigrationInterface {
  name = 'DocumentStorageKeys1763903100000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    await createIndexConcurrently(
      (sql, params) => queryRunner.query(sql, params),
      'uq_documents_storage_key',
      `ON "documents" ("storage_key")`,
      { unique: true },
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "uq_documents_storage_key"`);
  }
}
