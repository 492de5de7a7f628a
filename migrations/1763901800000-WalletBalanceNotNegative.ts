import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A wallet's balance is never negative, by the database too (docs/decisions/0037): every path that lowers one
 * checks the funds first (the transfer and reversal functions, a hold, an operator's balance set, which refuses
 * a negative target), and this constraint is the last line under them, against a bug or a hand-written UPDATE.
 * System accounts (settlement, fee revenue, tax payable, adjustments, holds) go negative by design and are not
 * concerned. An existing negative wallet balance stops the migration with the accounts named: it is a fault to
 * look at (`ledger verify`), not something to carry silently.
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
      `ALTER TABLE "ledger_accounts" ADD CONSTRAINT "CHK_ledger_accounts_wallet_not_negative"
         CHECK ("kind" <> 'WALLET' OR "balance" >= 0)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "ledger_accounts" DROP CONSTRAINT "CHK_ledger_accounts_wallet_not_negative"`,
    );
  }
}
