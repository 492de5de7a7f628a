import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionBefore, loadFunction } from './sql.js';

/** What this migration changes, as PostgreSQL prints the function: [the text it installs, the text it replaces]. */
const CHANGES: [string, string][] = [
  [
    `      IF v_movement = 'WITHDRAW' THEN
        -- The internal transfers checked before this hold are written first: their postings must be timed before
        -- the hold's (statements and balances as of a time read postings in (created_at, id) order, the order the
        -- checks ran), or a hold paid by a credit earlier in the group shows a balance the account never had.
        IF cardinality(v_writes) > 0 THEN
          PERFORM wallet_write_internal(v_writes);
          v_writes := '{}';
        END IF;
`,
    `      IF v_movement = 'WITHDRAW' THEN
`,
  ],
];

/**
 * A group's postings are timed in the order its checks ran (docs/decisions/0081-postings-in-check-order.md): the
 * internal transfers checked before an external WITHDRAW's hold are written before the hold is posted. Before, they
 * were all written at the end of the group, after every hold, so a hold paid by a credit earlier in the group
 * came first in the account's (created_at, id) order and statements and balances as of a time showed a negative
 * balance the ledger never had. Rows already written keep their times.
 */
export class PostingsInCheckOrder1763904500000 implements MigrationInterface {
  name = 'PostingsInCheckOrder1763904500000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction(
        'wallet_create_transfers',
        '6aa4099c5838c39c205ad4f178cd4723f31bf0e69f980f0d1f87c0b69d66053a',
      ),
    );
  }

  /** The function as it was: every internal transfer of the group written at its end. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      await functionBefore(
        (sql, params) => queryRunner.query(sql, params),
        'wallet_create_transfers',
        CHANGES,
      ),
    );
  }
}
