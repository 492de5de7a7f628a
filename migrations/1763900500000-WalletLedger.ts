import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The double-entry ledger and the wallet accounts on it.
 * - ledger_accounts: wallet accounts (cached balance kept in the posting transaction) and system accounts
 *   (settlement, fee revenue, tax payable, adjustments, holds; no cached balance, so they are never a hot row);
 * - journal_entries + postings: append-only (triggers refuse UPDATE and DELETE); every entry sums to zero per
 *   currency, checked at commit by a deferred constraint trigger;
 * - wallet_accounts: CVU (from a sequence: never reused), alias, status, limits, fees;
 * - operated_amounts: deposited/withdrawn per calendar month and year.
 */
export class WalletLedger1763900500000 implements MigrationInterface {
  name = 'WalletLedger1763900500000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "ledger_accounts" (
        "id" uuid NOT NULL,
        "kind" text NOT NULL,
        "code" text NOT NULL,
        "currency" text NOT NULL,
        "balance" numeric(24,6) NOT NULL DEFAULT 0,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_ledger_accounts" PRIMARY KEY ("id"),
        CONSTRAINT "CHK_ledger_accounts_kind" CHECK ("kind" IN ('WALLET', 'SYSTEM'))
      )`);
    await queryRunner.query(`
      CREATE TABLE "journal_entries" (
        "id" uuid NOT NULL,
        "app_id" uuid,
        "kind" text NOT NULL,
        "reference" text,
        "description" text,
        "actor" text NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_journal_entries" PRIMARY KEY ("id")
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_journal_entries_reference" ON "journal_entries" ("reference")`,
    );
    await queryRunner.query(`
      CREATE TABLE "postings" (
        "id" BIGSERIAL NOT NULL,
        "entry_id" uuid NOT NULL,
        "account_id" uuid NOT NULL,
        "amount" numeric(24,6) NOT NULL,
        "currency" text NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_postings" PRIMARY KEY ("id"),
        CONSTRAINT "CHK_postings_amount" CHECK ("amount" <> 0),
        CONSTRAINT "FK_postings_entry" FOREIGN KEY ("entry_id") REFERENCES "journal_entries"("id"),
        CONSTRAINT "FK_postings_account" FOREIGN KEY ("account_id") REFERENCES "ledger_accounts"("id")
      )`);
    await queryRunner.query(`CREATE INDEX "idx_postings_account" ON "postings" ("account_id", "id")`);
    await queryRunner.query(`CREATE INDEX "idx_postings_entry" ON "postings" ("entry_id")`);
    await queryRunner.query(`
      CREATE FUNCTION "ledger_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'ledger rows are append-only (% on %)', TG_OP, TG_TABLE_NAME;
        RETURN NULL;
      END
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER "journal_entries_append_only" BEFORE UPDATE OR DELETE ON "journal_entries"
      FOR EACH ROW EXECUTE FUNCTION "ledger_append_only"()`);
    await queryRunner.query(`
      CREATE TRIGGER "postings_append_only" BEFORE UPDATE OR DELETE ON "postings"
      FOR EACH ROW EXECUTE FUNCTION "ledger_append_only"()`);
    await queryRunner.query(`
      CREATE TRIGGER "journal_entries_no_truncate" BEFORE TRUNCATE ON "journal_entries"
      FOR EACH STATEMENT EXECUTE FUNCTION "ledger_append_only"()`);
    await queryRunner.query(`
      CREATE TRIGGER "postings_no_truncate" BEFORE TRUNCATE ON "postings"
      FOR EACH STATEMENT EXECUTE FUNCTION "ledger_append_only"()`);
    await queryRunner.query(`
      CREATE FUNCTION "ledger_entry_balances"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE unbalanced text;
      BEGIN
        SELECT currency INTO unbalanced FROM postings WHERE entry_id = NEW.entry_id
         GROUP BY currency HAVING sum(amount) <> 0 LIMIT 1;
        IF unbalanced IS NOT NULL THEN
          RAISE EXCEPTION 'journal entry % does not balance in %', NEW.entry_id, unbalanced;
        END IF;
        RETURN NULL;
      END
      $$`);
    await queryRunner.query(`
      CREATE CONSTRAINT TRIGGER "postings_balance" AFTER INSERT ON "postings"
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "ledger_entry_balances"()`);

    await queryRunner.query(`CREATE SEQUENCE "cvu_client_seq" START WITH 1 MINVALUE 1 NO CYCLE`);
    await queryRunner.query(`
      CREATE TABLE "wallet_accounts" (
        "id" uuid NOT NULL,
        "app_id" uuid NOT NULL,
        "owner_type" text NOT NULL,
        "owner_id" uuid NOT NULL,
        "cvu" text NOT NULL,
        "alias" text NOT NULL,
        "currency" text NOT NULL,
        "status" text NOT NULL DEFAULT 'ACTIVE',
        "name" text,
        "nationality" text,
        "monthly_deposit_limit" numeric(24,6) NOT NULL,
        "monthly_withdraw_limit" numeric(24,6) NOT NULL,
        "annual_deposit_limit" numeric(24,6) NOT NULL,
        "annual_withdraw_limit" numeric(24,6) NOT NULL,
        "limits_id" uuid NOT NULL,
        "fee_type" text NOT NULL DEFAULT 'FIXED',
        "fee_amount" numeric(24,6) NOT NULL DEFAULT 0,
        "fees_id" uuid NOT NULL,
        "operado_id" uuid NOT NULL,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "deleted_at" TIMESTAMP WITH TIME ZONE,
        CONSTRAINT "PK_wallet_accounts" PRIMARY KEY ("id"),
        CONSTRAINT "UQ_wallet_accounts_cvu" UNIQUE ("cvu"),
        CONSTRAINT "CHK_wallet_accounts_status" CHECK ("status" IN ('ACTIVE', 'INACTIVE', 'PENDING', 'DELETED')),
        CONSTRAINT "CHK_wallet_accounts_owner_type" CHECK ("owner_type" IN ('USER', 'COMPANY')),
        CONSTRAINT "CHK_wallet_accounts_fee_type" CHECK ("fee_type" IN ('FIXED', 'PERCENTAGE')),
        CONSTRAINT "FK_wallet_accounts_ledger" FOREIGN KEY ("id") REFERENCES "ledger_accounts"("id"),
        CONSTRAINT "FK_wallet_accounts_app" FOREIGN KEY ("app_id") REFERENCES "applications"("id")
      )`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "uq_wallet_accounts_alias" ON "wallet_accounts" (lower("alias")) WHERE "status" <> 'DELETED'`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "uq_wallet_accounts_owner" ON "wallet_accounts" ("app_id", "owner_id") WHERE "status" <> 'DELETED'`,
    );
    await queryRunner.query(`
      CREATE TABLE "operated_amounts" (
        "account_id" uuid NOT NULL,
        "period" text NOT NULL,
        "deposit" numeric(24,6) NOT NULL DEFAULT 0,
        "withdraw" numeric(24,6) NOT NULL DEFAULT 0,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_operated_amounts" PRIMARY KEY ("account_id", "period"),
        CONSTRAINT "FK_operated_amounts_account" FOREIGN KEY ("account_id") REFERENCES "wallet_accounts"("id")
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "operated_amounts"`);
    await queryRunner.query(`DROP TABLE "wallet_accounts"`);
    await queryRunner.query(`DROP SEQUENCE "cvu_client_seq"`);
    await queryRunner.query(`DROP TABLE "postings"`);
    await queryRunner.query(`DROP FUNCTION "ledger_entry_balances"()`);
    await queryRunner.query(`DROP TABLE "journal_entries"`);
    await queryRunner.query(`DROP FUNCTION "ledger_append_only"()`);
    await queryRunner.query(`DROP TABLE "ledger_accounts"`);
  }
}
