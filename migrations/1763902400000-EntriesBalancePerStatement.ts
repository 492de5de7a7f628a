import type { MigrationInterface, QueryRunner } from 'typeorm';
import { loadFunction } from './sql.js';

/**
 * Every journal entry balances per statement, not per posting at commit
 * (docs/decisions/0049-entries-balance-per-statement.md). `postings_balance` was a deferred constraint trigger for
 * each row: at commit, for every posting inserted, a PL/pgSQL call and a query summing its entry's postings (two
 * per internal transfer, four with a fee and a tax). It is now an AFTER INSERT trigger for each statement, whose
 * function reads the statement's rows (the transition table `new_postings`) and refuses the INSERT when they do
 * not sum to zero for an entry and currency. Postings are append-only, so every entry still balances at commit;
 * an entry's postings written by two statements must now balance in each (ledger_post and wallet_write_internal
 * write an entry's postings in one INSERT).
 */
export class EntriesBalancePerStatement1763902400000 implements MigrationInterface {
  name = 'EntriesBalancePerStatement1763902400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "postings_balance" ON "postings"`);
    await queryRunner.query(
      loadFunction(
        'ledger_entry_balances',
        'aecfbd60cb5e0226b1c058dca22a67e62a6d1f95212b310da02603e4a7bb01ad',
      ),
    );
    await queryRunner.query(`
      CREATE TRIGGER "postings_balance" AFTER INSERT ON "postings"
      REFERENCING NEW TABLE AS "new_postings"
      FOR EACH STATEMENT EXECUTE FUNCTION "ledger_entry_balances"()`);
    // Only its header changed (where the check runs): loaded again so the file stays the last loaded copy.
    await queryRunner.query(
      loadFunction(
        'wallet_write_internal',
        '8afddd444400fa3b1848568f360326f4a0b09515df3d738359c8ea658581d5d4',
      ),
    );
  }

  /**
   * The deferred check for each row, and its function as it was (the file at the commit before this one).
   * wallet_write_internal stays: only its file's header changed.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "postings_balance" ON "postings"`);
    await queryRunner.query(ENTRY_BALANCES_BEFORE);
    await queryRunner.query(`
      CREATE CONSTRAINT TRIGGER "postings_balance" AFTER INSERT ON "postings"
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "ledger_entry_balances"()`);
  }
}

const ENTRY_BALANCES_BEFORE = `CREATE OR REPLACE FUNCTION public.ledger_entry_balances()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      DECLARE unbalanced text;
      BEGIN
        SELECT currency INTO unbalanced FROM postings WHERE entry_id = NEW.entry_id
         GROUP BY currency HAVING sum(amount) <> 0 LIMIT 1;
        IF unbalanced IS NOT NULL THEN
          RAISE EXCEPTION 'journal entry % does not balance in %', NEW.entry_id, unbalanced;
        END IF;
        RETURN NULL;
      END
      $function$
`;
