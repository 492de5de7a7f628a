import type { MigrationInterface, QueryRunner } from 'typeorm';
import { loadFunction } from './sql.js';

/**
 * No transaction commits with a wallet's balance below zero, by the database too (docs/decisions/0037): every
 * path that lowers one checks the funds first (the transfer and reversal functions, a hold, an operator's
 * balance set, which refuses a negative target), and this is the last line under them, against a bug or a
 * hand-written UPDATE. A deferred constraint trigger, not a CHECK: a group of transfers posts an external
 * hold at once and its incoming internal amounts at its end, so a balance may pass below zero inside the
 * transaction. Its WHEN clause is evaluated as each row changes and queues nothing for a wallet at zero or
 * above, so the common case costs what a CHECK would. System accounts keep no cached balance and are not
 * concerned. An existing negative wallet balance stops the migration with the accounts named: it is a fault
 * to look at (`ledger verify`), not something to carry silently.
 */
export class WalletBalanceNotNegative1763901800000 implements MigrationInterface {
  name = 'WalletBalanceNotNegative1763901800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const negative = (await queryRunner.query(
      `SELECT id::text AS id, balance::text AS balance FROM "ledger_accounts"
        WHERE "kind" = 'WALLET' AND "balance" < 0 ORDER BY id LIMIT 10`,
    )) as { id: string; balance: string }[];
    if (negative.length > 0) {
      throw new Error(
        `wallet accounts with a negative balance (the first ${negative.length}): ` +
          negative.map((row) => `${row.id} ${row.balance}`).join(', ') +
          '; see docs/decisions/0037-wallet-balance-not-negative.md',
      );
    }
    await queryRunner.query(
      loadFunction(
        'ledger_wallet_not_negative',
        'c022513f115b4610cbc97cf6661c18ff7a05b8b4f306324f23e4051dc7d77fb7',
      ),
    );
    await queryRunner.query(
      `CREATE CONSTRAINT TRIGGER "ledger_accounts_wallet_not_negative"
         AFTER INSERT OR UPDATE OF "balance" ON "ledger_accounts"
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
         WHEN (NEW."kind" = 'WALLET' AND NEW."balance" < 0)
         EXECUTE FUNCTION ledger_wallet_not_negative()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "ledger_accounts_wallet_not_negative" ON "ledger_accounts"`);
    await queryRunner.query(`DROP FUNCTION "ledger_wallet_not_negative"()`);
  }
}
