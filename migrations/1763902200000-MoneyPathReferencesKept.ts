import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionDefinitions, loadFunction } from './sql.js';

/** The money path's foreign keys this migration stops enforcing, by table (decision 0046 names what each refers to). */
const REFERENCES = [
  ['postings', 'FK_postings_entry'],
  ['postings', 'FK_postings_account'],
  ['transfers', 'FK_transfers_account'],
  ['operated_amounts', 'FK_operated_amounts_account'],
  ['webhook_events', 'FK_webhook_events_app'],
] as const;

/** The tables whose rows those name, kept by ledger_parents_kept (journal_entries is append-only already). */
const KEPT = ['ledger_accounts', 'wallet_accounts', 'applications'] as const;

/** What this migration adds to `ledger_post`, as PostgreSQL prints it (the `down` takes it out again). */
const ACCOUNT_CHECK = `        -- postings.account_id is a foreign key not enforced (decision 0046): every account is looked up here.
        IF EXISTS (SELECT 1 FROM unnest(p_accounts, p_amounts) AS t(account_id, amount)
                    WHERE amount <> 0 AND NOT EXISTS (SELECT 1 FROM ledger_accounts a WHERE a.id = t.account_id)) THEN
          RAISE EXCEPTION 'a journal entry names an account that does not exist';
        END IF;
`;

/**
 * The money path's foreign keys are declared, not enforced (docs/decisions/0046-money-path-references-kept.md).
 * An enforced key checks every inserted row with a query that also locks the row it names (FOR KEY SHARE, a WAL
 * record, and a multixact when concurrent transfers name the same application): about nine such checks per
 * internal transfer, for rows whose writers have just read (and mostly locked) what they name. Measured with
 * bench/transfer-function.mjs, alternated: about 9 % less PostgreSQL time per single transfer, 9–13 % more
 * transfers per second in groups. What the checks gave is kept otherwise: the named rows are never deleted
 * (ledger_parents_kept on their tables; journal entries were append-only already), `ledger_post` looks up the
 * accounts it is given, and `ledger verify` reports any row that names nothing.
 */
export class MoneyPathReferencesKept1763902200000 implements MigrationInterface {
  name = 'MoneyPathReferencesKept1763902200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction('ledger_parents_kept', 'f8c677cac2e624594c545c4cf99f4a02492d4f562bb8a3779983e83214adc7a3'),
    );
    for (const table of KEPT) {
      await queryRunner.query(
        `CREATE TRIGGER "${table}_kept" BEFORE DELETE OR TRUNCATE ON "${table}"
           FOR EACH STATEMENT EXECUTE FUNCTION ledger_parents_kept()`,
      );
    }
    await queryRunner.query(
      loadFunction('ledger_post', 'dbc01626723323f6cbb245296609cb3b78102722bf99a2037e9f05a0f6bdb256'),
    );
    for (const [table, constraint] of REFERENCES) {
      await queryRunner.query(`ALTER TABLE "${table}" ALTER CONSTRAINT "${constraint}" NOT ENFORCED`);
    }
  }

  /** Enforced again (which checks every existing row), the triggers dropped, ledger_post as it was. */
  async down(queryRunner: QueryRunner): Promise<void> {
    for (const [table, constraint] of REFERENCES) {
      await queryRunner.query(`ALTER TABLE "${table}" ALTER CONSTRAINT "${constraint}" ENFORCED`);
    }
    const live = (await functionDefinitions((sql, params) => queryRunner.query(sql, params))).ledger_post;
    if (!live.includes(ACCOUNT_CHECK)) throw new Error('ledger_post is not the one this migration installed');
    await queryRunner.query(live.replace(ACCOUNT_CHECK, ''));
    for (const table of KEPT) await queryRunner.query(`DROP TRIGGER "${table}_kept" ON "${table}"`);
    await queryRunner.query(`DROP FUNCTION ledger_parents_kept()`);
  }
}
