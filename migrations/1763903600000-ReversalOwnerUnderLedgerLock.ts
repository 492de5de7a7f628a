import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionBefore, loadFunction } from './sql.js';

/**
 * What this migration changes in `wallet_reverse_transfer`, as PostgreSQL prints it: each pair is [the text it
 * installs, the text it replaces] (the `down` puts the second back). The user's owner check leaves the checks
 * made before the ledger lock and follows the read of the account that gives back, made under it.
 */
const CHANGES: [string, string][] = [
  [
    `          'message', 'only the application of the account that received the transfer can give it back');
        EXIT checks;
      END IF;
    END IF;
`,
    `          'message', 'only the application of the account that received the transfer can give it back');
        EXIT checks;
      END IF;
      IF v_subject IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM wallet_accounts a WHERE a.id = d.account_id AND a.owner_id = v_subject) THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'FORBIDDEN',
          'message', 'only the owner of the account that received the transfer can give it back');
        EXIT checks;
      END IF;
    END IF;
`,
  ],
  [
    `       WHERE a.id = d.account_id;
      -- With a user token, only the owner of the account that gives back, as read here: under the ledger lock, so
      -- an owner change that held the lock is seen, and the answer names the owner that was checked.
      IF v_subject IS NOT NULL AND giver.owner_id <> v_subject THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'FORBIDDEN',
          'message', 'only the owner of the account that received the transfer can give it back');
        EXIT checks;
      END IF;
`,
    `       WHERE a.id = d.account_id;
`,
  ],
];

/**
 * A user's reversal checks the owner of the account that gives back on the read made under that account's
 * ledger lock, the read its answer is built from (docs/decisions/0068-races-found-in-review.md). It checked the
 * owner before the lock and answered with the owner read after it: an owner change committed while the reversal
 * waited for the lock let it give back another owner's money under the first user's name, and answer with that
 * owner's name and tax id. The refusal is the same 403 FORBIDDEN.
 */
export class ReversalOwnerUnderLedgerLock1763903600000 implements MigrationInterface {
  name = 'ReversalOwnerUnderLedgerLock1763903600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        '5bb9c9b6c72c8ed54637a1f07d0657d46be63c0583dcb43705b2a27a6a25f110',
      ),
    );
  }

  /** The function as it was: the owner checked before the ledger lock. */
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
