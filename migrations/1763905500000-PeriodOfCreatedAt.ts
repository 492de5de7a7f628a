import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionBefore, loadFunction } from './sql.js';

/** What this migration changes in wallet_create_transfers, as PostgreSQL prints it: [installed, replaced]. */
const CHANGES: [string, string][] = [
  [`  v_month text;\n  v_now_month text;\n  v_now_year text;\n`, `  v_month text;\n`],
  [
    `  -- The period of now(), which every created_at of the call is: once for the group.
  IF v_items[1] ? 'timeZone' THEN
    SELECT n.month, n.year INTO v_now_month, v_now_year FROM wallet_periods(v_items[1]->>'timeZone') n;
  END IF;

  -- One pass more`,
    `  -- One pass more`,
  ],
  [
    `v_month IS DISTINCT FROM coalesce(v_item->>'month', v_now_month) THEN`,
    `v_month IS DISTINCT FROM v_item->>'month' THEN`,
  ],
  [`      v_month := coalesce(v_item->>'month', v_now_month);\n`, `      v_month := v_item->>'month';\n`],
  [
    `      v_first := 'M' || substr(coalesce(v_item->>'year', v_now_year), 2) || '-01';
      v_last := 'M' || substr(coalesce(v_item->>'year', v_now_year), 2) || '-12';`,
    `      v_first := 'M' || substr(v_item->>'year', 2) || '-01';
      v_last := 'M' || substr(v_item->>'year', 2) || '-12';`,
  ],
];

/** The files this migration loads, pinned at their text (src/modules/transfers/sql/README.md), in this order. */
const PINS = {
  wallet_periods: '8d5fa0ac6ab1aacf6a547d3bb3f840709573f0cc654e7fdebd1114585a7da5e0',
  wallet_create_transfers: '36ef69ff97cfbfeb28e3abc2d78d79e83200156fd1aa4ea7d8d8477426325128',
};

/**
 * A transfer is checked against, and counted in, the month and year of its own created_at (the call's now() on
 * OPERATIONS_TIME_ZONE, wallet_periods), not of the API's clock when the request arrived, which a group commit
 * or a row lock could hold across a month's end (docs/decisions/0098-credits-taxed-and-counted-when-written.md).
 * The function's signature is unchanged and it still honours a request's `month` and `year`, so APIs of the code
 * before go on working through a rolling upgrade; the new API sends `timeZone` instead.
 */
export class PeriodOfCreatedAt1763905500000 implements MigrationInterface {
  name = 'PeriodOfCreatedAt1763905500000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const [name, sha256] of Object.entries(PINS)) await queryRunner.query(loadFunction(name, sha256));
  }

  /** The function takes the request's month and year again, and wallet_periods is dropped. */
  async down(queryRunner: QueryRunner): Promise<void> {
    const query = (sql: string, params: unknown[]) => queryRunner.query(sql, params);
    await queryRunner.query(await functionBefore(query, 'wallet_create_transfers', CHANGES));
    await queryRunner.query(`DROP FUNCTION wallet_periods(text)`);
  }
}
