import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionBefore, loadFunction } from './sql.js';

/**
 * What this migration changes in `wallet_reverse_transfer`, as PostgreSQL prints it: each pair is [the text it
 * installs, the text it replaces] (the `down` puts the second back). The scope is checked before the transfer's
 * lock; a return is no longer refused for its account's state, and a closed account's goes to UNCLAIMED_RETURNS.
 */
const CHANGES: [string, string][] = [
  [
    `  v_linked uuid;
  v_owner_app uuid;
  v_account uuid;
  v_unclaimed boolean := false;
`,
    `  v_linked uuid;
`,
  ],
  [
    `  <<checks>>
  BEGIN
    -- The scope first, from a plain read (linked_transfer_id, app_id and account_id never change): a caller that
    -- is answered 404 takes no lock, so it never waits for the transfer's own application nor delays it.
    SELECT x.linked_transfer_id, x.app_id, x.account_id INTO v_linked, v_owner_app, v_account
      FROM transfers x WHERE x.id = v_id;
    IF NOT FOUND OR (NOT v_return AND v_owner_app <> v_app) THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
    END IF;
    -- A user token reaches only the rows of its owner's accounts (as GET /wallet/transactions/{uuid}).
    IF v_subject IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM wallet_accounts a WHERE a.id = v_account AND a.owner_id = v_subject) THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
    END IF;
    -- The original pair, locked in id order, then read under the lock.
    PERFORM 1 FROM transfers x WHERE x.id IN (v_id, v_linked) ORDER BY x.id FOR UPDATE;
    SELECT * INTO t FROM transfers x WHERE x.id = v_id;
    IF v_return THEN
      v_app := t.app_id; -- the application a return's reference is claimed under
    END IF;
`,
    `  <<checks>>
  BEGIN
    SELECT x.linked_transfer_id INTO v_linked FROM transfers x WHERE x.id = v_id;
    IF NOT FOUND THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
    END IF;
    -- The original pair, locked in id order (linked_transfer_id never changes), then read under the lock.
    PERFORM 1 FROM transfers x WHERE x.id IN (v_id, v_linked) ORDER BY x.id FOR UPDATE;
    SELECT * INTO t FROM transfers x WHERE x.id = v_id;
    IF v_return THEN
      v_app := t.app_id; -- the application a return's reference is claimed under
    END IF;
    IF NOT v_return AND t.app_id <> v_app THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
    END IF;
    -- A user token reaches only the rows of its owner's accounts (as GET /wallet/transactions/{uuid}).
    IF v_subject IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM wallet_accounts a WHERE a.id = t.account_id AND a.owner_id = v_subject) THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
    END IF;
`,
  ],
  [
    `    IF v_return THEN
      -- The rail has paid: a return is booked whatever the account's state. No money lands in a closed account
      -- (decision 0053): a DELETED account's goes to UNCLAIMED_RETURNS; any other account is credited (decision
      -- 0062).
      v_unclaimed := taker.status = 'DELETED';
`,
    `    IF v_return THEN
      IF taker.status <> 'ACTIVE' THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
          'message', 'the account is ' || taker.status);
        EXIT checks;
      END IF;
`,
  ],
  [
    `    PERFORM ledger_post(taker.app_id, 'TRANSFER_RETURN', v_rd::text, p->>'reason', p->>'actor',
      ARRAY[ledger_system_account('SETTLEMENT', w.currency),
            CASE WHEN v_unclaimed THEN ledger_system_account('UNCLAIMED_RETURNS', w.currency) ELSE taker.id END],
      ARRAY[-v_amount, v_amount], w.currency);
`,
    `    PERFORM ledger_post(taker.app_id, 'TRANSFER_RETURN', v_rd::text, p->>'reason', p->>'actor',
      ARRAY[ledger_system_account('SETTLEMENT', w.currency), taker.id], ARRAY[-v_amount, v_amount], w.currency);
`,
  ],
  [
    `            NULL, NULL, v_amount, w.currency, 0, 0, w.concept, NULL, p->>'reason', w.id);
    IF v_unclaimed THEN
      INSERT INTO unclaimed_returns (transfer_id) VALUES (v_rd);
    END IF;
`,
    `            NULL, NULL, v_amount, w.currency, 0, 0, w.concept, NULL, p->>'reason', w.id);
`,
  ],
];

/**
 * Returns to closed accounts (docs/decisions/0062-returns-to-closed-accounts.md). The rail's return of a WITHDRAW
 * whose account was closed since is booked, not refused: the same DEPOSIT row (so SETTLEMENT still equals what
 * the settled transfers say), its money credited to the system account UNCLAIMED_RETURNS instead of the closed
 * account, and a row in `unclaimed_returns` naming the DEPOSIT until an operator pays it out into another account
 * of the same owner (`paid_out_at`, `paid_out_to`: both set or both null). An INACTIVE or PENDING account is
 * credited. Also, a caller outside the transfer's scope is answered 404 before the function locks anything.
 */
export class ReturnsToClosedAccounts1763903200000 implements MigrationInterface {
  name = 'ReturnsToClosedAccounts1763903200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "unclaimed_returns" (
         "transfer_id" uuid NOT NULL,
         "paid_out_at" TIMESTAMP WITH TIME ZONE,
         "paid_out_to" uuid,
         CONSTRAINT "CHK_unclaimed_returns_paid_out" CHECK (("paid_out_at" IS NULL) = ("paid_out_to" IS NULL)),
         CONSTRAINT "PK_unclaimed_returns" PRIMARY KEY ("transfer_id"),
         CONSTRAINT "FK_unclaimed_returns_transfer" FOREIGN KEY ("transfer_id") REFERENCES "transfers"("id"),
         CONSTRAINT "FK_unclaimed_returns_paid_out_to" FOREIGN KEY ("paid_out_to") REFERENCES "wallet_accounts"("id")
       )`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_unclaimed_returns_held" ON "unclaimed_returns" ("transfer_id") WHERE "paid_out_at" IS NULL`,
    );
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        'e60ecbe5ef6e3fd7fa42b0b369a93856b4c9887656e4c9846d876996d4c59840',
      ),
    );
  }

  /**
   * The function as it was, and the table dropped. Refused while the table names a return: its money sits in
   * UNCLAIMED_RETURNS, and without the row no one would find whose it is.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    const [held] = (await queryRunner.query(`SELECT count(*)::int AS n FROM "unclaimed_returns"`)) as {
      n: number;
    }[];
    if (held.n > 0)
      throw new Error(
        `unclaimed_returns names ${held.n} returns to closed accounts: undoing this migration would lose whose money UNCLAIMED_RETURNS holds`,
      );
    await queryRunner.query(
      await functionBefore(
        (sql, params) => queryRunner.query(sql, params),
        'wallet_reverse_transfer',
        CHANGES,
      ),
    );
    await queryRunner.query(`DROP TABLE "unclaimed_returns"`);
  }
}
