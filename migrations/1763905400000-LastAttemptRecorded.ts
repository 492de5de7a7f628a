import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionBefore, loadFunction } from './sql.js';

/** What this migration changes, as PostgreSQL prints each function: [the text it installs, the text it replaces]. */
const CHANGES: Record<'webhook_claim_for_delivery' | 'webhook_record', [string, string][]> = {
  webhook_claim_for_delivery: [
    [`attempts = attempts + 1\n`, `attempts = attempts + 1, last_attempt_at = now()\n`],
  ],
  webhook_record: [
    [
      `THEN now() END,\n           last_attempt_at = to_timestamp(i.started_ms / 1000),\n`,
      `THEN now() END,\n`,
    ],
  ],
};

/** The files this migration loads, pinned at their text (src/modules/transfers/sql/README.md). */
const PINS = {
  webhook_claim_for_delivery: '9fc863f253bf2b3a1aab4a07cafacf0165b45b2a67e52847274e79103be13557',
  webhook_record: 'c57a46f023e4d7cb17fc349938d646a4938a90cdb57ff1a13928434ec546e84e',
};

/**
 * An event's last_attempt_at (the events feed's `delivery.lastAttemptAt`) is the start of the last attempt
 * recorded, as its webhook_attempts row says, and stays as it was when a claim is given back unsent
 * (docs/decisions/0095-last-attempt-is-an-attempt-made.md): the claim no longer sets it, the record does. Neither
 * function changes its arguments or result type, so workers of the code before (whose give-backs do not touch the
 * column) go on claiming and recording through a rolling upgrade, and get the new behaviour at once.
 */
export class LastAttemptRecorded1763905400000 implements MigrationInterface {
  name = 'LastAttemptRecorded1763905400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const [name, sha256] of Object.entries(PINS)) await queryRunner.query(loadFunction(name, sha256));
  }

  /** The claim sets last_attempt_at again, and the record leaves it alone. */
  async down(queryRunner: QueryRunner): Promise<void> {
    const query = (sql: string, params: unknown[]) => queryRunner.query(sql, params);
    for (const name of ['webhook_claim_for_delivery', 'webhook_record'] as const) {
      await queryRunner.query(await functionBefore(query, name, CHANGES[name]));
    }
  }
}
