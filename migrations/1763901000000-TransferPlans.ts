import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The transfer functions plan every statement as an index probe, whatever the statistics said when a
 * connection first ran them (docs/decisions/0022-transfer-plans.md).
 *
 * PL/pgSQL keeps a generic plan per statement and per connection. Planned while a table is small (a new
 * database, or just after a bulk load and ANALYZE), the in-flight sum over `transfers`, the operated amounts
 * and the group's lock query were sequential scans, and stayed so while the tables grew: the bench's first
 * transfer phase read 79 million `transfers` rows in 20,000 scans and ran 4x slower than the next one. Every
 * statement of these functions has an index that answers it, so sequential scans are switched off for their
 * duration (a setting of the function, restored when it returns; nested calls inherit it).
 */
export class TransferPlans1763901000000 implements MigrationInterface {
  name = 'TransferPlans1763901000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const fn of FUNCTIONS) await queryRunner.query(`ALTER FUNCTION ${fn} SET enable_seqscan = off`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const fn of FUNCTIONS) await queryRunner.query(`ALTER FUNCTION ${fn} RESET enable_seqscan`);
  }
}

/** The entry points the service calls; wallet_transfer_try and the writers run inside them. */
const FUNCTIONS = ['"wallet_create_transfer"(jsonb)', '"wallet_create_transfers"(jsonb)'];
