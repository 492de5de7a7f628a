import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionBefore, loadFunction } from './sql.js';

/**
 * What this migration changes in `wallet_reverse_transfer`, as PostgreSQL prints it: [the text it installs, the
 * text it replaces] (the `down` puts the second back). A new row's event takes the original row as its subject.
 */
const CHANGES: [string, string][] = [
  [
    `  -- A transfer_update for each new row, to the application of its account (as wallet_write_internal writes it),
  -- its subject the original row of that account (reversal_of): delivered after the original's own events.
  INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
  SELECT uuidv7(), x.app_id, 'transfer_update', x.reversal_of::text,`,
    `  -- A transfer_update for each new row, to the application of its account (as wallet_write_internal writes it).
  INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
  SELECT uuidv7(), x.app_id, 'transfer_update', x.id::text,`,
  ],
];

/**
 * A reversal's or a return's transfer_update reaches its application after the events of the transfer it gives
 * back (docs/decisions/0071-reversal-events-after-the-original.md): its subject is the original row of the same
 * account, and delivery is ordered per subject. It was the new row's own id: a reversal could be announced while
 * the original's ACCEPTED was still being retried, and a return before the WITHDRAW's final status.
 */
export class ReversalEventsAfterTheOriginal1763903700000 implements MigrationInterface {
  name = 'ReversalEventsAfterTheOriginal1763903700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        '6bebb2f098b39c1a70a5fae1fd8b734411e21f2b7ece902d09dfa3ac18e3732c',
      ),
    );
  }

  /** The function as it was: each new row's event its own subject. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      await functionBefore(
        (sql, params) => queryRunner.query(sql, params),
        'wallet_reverse_transfer',
        CHANGES,
      ),
    );
  }
}
