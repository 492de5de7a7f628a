import type { MigrationInterface, QueryRunner } from 'typeorm';
import { loadFunction } from './sql.js';

/**
 * Reversals and returns from the rail (docs/decisions/0031-reversals.md): a transfer that gives money back points
 * at the original row of its own account (`reversal_of`), indexed for the reversed total and the list of
 * reversals; the database function `wallet_reverse_transfer(jsonb)` writes one.
 */
export class Reversals1763901300000 implements MigrationInterface {
  name = 'Reversals1763901300000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "transfers" ADD "reversal_of" uuid`);
    await queryRunner.query(
      `ALTER TABLE "transfers" ADD CONSTRAINT "FK_transfers_reversal_of" FOREIGN KEY ("reversal_of") REFERENCES "transfers"("id")`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_transfers_reversal_of" ON "transfers" ("reversal_of") WHERE "reversal_of" IS NOT NULL`,
    );
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        '7861155a11b164f85680156ef8de35ea0e08e69cda3f653d3b7183428465ba2c',
      ),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION "wallet_reverse_transfer"(jsonb)`);
    await queryRunner.query(`DROP INDEX "idx_transfers_reversal_of"`);
    await queryRunner.query(`ALTER TABLE "transfers" DROP CONSTRAINT "FK_transfers_reversal_of"`);
    await queryRunner.query(`ALTER TABLE "transfers" DROP COLUMN "reversal_of"`);
  }
}
