import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Transfers with their status history, and the idempotency keys of POST /wallet/transactions. */
export class Transfers1763900600000 implements MigrationInterface {
  name = 'Transfers1763900600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "transfers" (
        "id" uuid NOT NULL,
        "app_id" uuid NOT NULL,
        "account_id" uuid NOT NULL,
        "movement_type" text NOT NULL,
        "status" text NOT NULL,
        "route" text NOT NULL,
        "counterparty_name" text NOT NULL,
        "counterparty_tax_id" text NOT NULL,
        "counterparty_identifier_type" text NOT NULL,
        "counterparty_identifier" text NOT NULL,
        "counterparty_branch" text,
        "counterparty_account_id" uuid,
        "linked_transfer_id" uuid,
        "amount" numeric(24,6) NOT NULL,
        "currency" text NOT NULL,
        "fees" numeric(24,6) NOT NULL DEFAULT 0,
        "taxes" numeric(24,6) NOT NULL DEFAULT 0,
        "concept" text NOT NULL,
        "summary" text,
        "description" text,
        "clearing_id" text,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_transfers" PRIMARY KEY ("id"),
        CONSTRAINT "CHK_transfers_movement_type" CHECK ("movement_type" IN ('DEPOSIT', 'WITHDRAW')),
        CONSTRAINT "CHK_transfers_route" CHECK ("route" IN ('INTERNAL', 'EXTERNAL')),
        CONSTRAINT "CHK_transfers_status" CHECK ("status" IN ('COMMITING', 'INICIADO', 'EN_CURSO', 'ERROR_DATOS', 'SIN_GARANTIA', 'ERROR_ACREDITACION', 'ACREDITADO')),
        CONSTRAINT "FK_transfers_account" FOREIGN KEY ("account_id") REFERENCES "wallet_accounts"("id")
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_transfers_app_created" ON "transfers" ("app_id", "created_at", "id")`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_transfers_account_created" ON "transfers" ("account_id", "created_at", "id")`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_transfers_in_flight" ON "transfers" ("updated_at") WHERE "status" IN ('COMMITING', 'INICIADO', 'EN_CURSO')`,
    );
    await queryRunner.query(`
      CREATE TABLE "transfer_status_history" (
        "id" BIGSERIAL NOT NULL,
        "transfer_id" uuid NOT NULL,
        "from_status" text,
        "to_status" text NOT NULL,
        "at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_transfer_status_history" PRIMARY KEY ("id"),
        CONSTRAINT "FK_transfer_status_history_transfer" FOREIGN KEY ("transfer_id") REFERENCES "transfers"("id")
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_transfer_status_history_transfer" ON "transfer_status_history" ("transfer_id", "id")`,
    );
    await queryRunner.query(`
      CREATE TABLE "idempotency_keys" (
        "app_id" uuid NOT NULL,
        "key" text NOT NULL,
        "request_hash" text NOT NULL,
        "response_status" integer,
        "response_body" jsonb,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_idempotency_keys" PRIMARY KEY ("app_id", "key")
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_idempotency_keys_created" ON "idempotency_keys" ("created_at")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "idempotency_keys"`);
    await queryRunner.query(`DROP TABLE "transfer_status_history"`);
    await queryRunner.query(`DROP TABLE "transfers"`);
  }
}
