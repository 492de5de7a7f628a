import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionDefinitions, loadFunction } from './sql.js';

/**
 * What this migration changes in `wallet_reverse_transfer`, as PostgreSQL prints it: each pair is [the text it
 * installs, the text it replaces] (the `down` puts the second back). The ledger rows' locks move ahead of the
 * reads of the accounts' states.
 */
const CHANGES: [string, string][] = [
  [
    `    -- The accounts: the one that gives back (the receiver; none for a return) and the original sender. Their
    -- ledger rows are locked first and their states read after, so an account closed by a transaction that held
    -- the lock is seen closed (each statement reads what committed before it began).
    IF v_return THEN
      PERFORM 1 FROM ledger_accounts l WHERE l.id = w.account_id FOR UPDATE;
    ELSE
      SELECT max(l.balance) FILTER (WHERE l.id = d.account_id) INTO v_balance
        FROM (SELECT id, balance FROM ledger_accounts WHERE id IN (d.account_id, w.account_id) ORDER BY id FOR UPDATE) l;
    END IF;
`,
    `    -- The accounts: the one that gives back (the receiver; none for a return) and the original sender.
`,
  ],
  [
    `    IF v_return THEN
      IF taker.status`,
    `    IF v_return THEN
      PERFORM 1 FROM ledger_accounts l WHERE l.id = taker.id FOR UPDATE;
      IF taker.status`,
  ],
  [
    `       WHERE a.id = d.account_id;
      IF giver.status`,
    `       WHERE a.id = d.account_id;
      SELECT max(l.balance) FILTER (WHERE l.id = giver.id) INTO v_balance
        FROM (SELECT id, balance FROM ledger_accounts WHERE id IN (giver.id, taker.id) ORDER BY id FOR UPDATE) l;
      IF giver.status`,
  ],
];

/**
 * A reversal reads the two accounts' states after it has locked their ledger rows, not before: an account closed
 * (DELETE /wallet/accounts/{uuid}, which holds the ledger lock while it checks the balance) by a transaction the
 * reversal waited for was read ACTIVE, and the reversal then credited the closed account
 * (docs/decisions/0053-review-of-rules-at-their-edges.md).
 */
export class ReversalLocksBeforeStates1763902800000 implements MigrationInterface {
  name = 'ReversalLocksBeforeStates1763902800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        'f6c357c34cc705a8627cddfd5f641227433e9e93c2f2b8fc83418e6727ed7a51',
      ),
    );
  }

  /** The function as it was: the live one with the states read before the locks. */
  async down(queryRunner: QueryRunner): Promise<void> {
    let live = (await functionDefinitions((sql, params) => queryRunner.query(sql, params)))
      .wallet_reverse_transfer;
    for (const [installed, replaced] of CHANGES) {
      if (!live.includes(installed))
        throw new Error('wallet_reverse_transfer is not the one this migration installed');
      live = live.replace(installed, replaced);
    }
    await queryRunner.query(live);
  }
}
