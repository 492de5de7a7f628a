import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Users, companies, their KYC data and the KYC change history. */
export class Identity1763900200000 implements MigrationInterface {
  name = 'Identity1763900200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "users" (
        "id" uuid NOT NULL,
        "app_id" uuid NOT NULL,
        "first_name" text NOT NULL,
        "last_name" text NOT NULL,
        "birthdate" date NOT NULL,
        "sex" text NOT NULL,
        "civil_status" text NOT NULL,
        "nationality" text NOT NULL,
        "email" text,
        "legal_name" text,
        "tax_id_type" text NOT NULL,
        "tax_id" text NOT NULL,
        "tax_condition" text NOT NULL,
        "category" text NOT NULL,
        "tax_exempt" boolean NOT NULL,
        "legal_address" jsonb NOT NULL,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "deleted_at" TIMESTAMP WITH TIME ZONE,
        CONSTRAINT "PK_users" PRIMARY KEY ("id"),
        CONSTRAINT "FK_users_app" FOREIGN KEY ("app_id") REFERENCES "applications"("id")
      )`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "uq_users_app_tax_id" ON "users" ("app_id", "tax_id") WHERE "deleted_at" IS NULL`,
    );
    await queryRunner.query(`CREATE INDEX "idx_users_app_created" ON "users" ("app_id", "created_at", "id")`);

    await queryRunner.query(`
      CREATE TABLE "companies" (
        "id" uuid NOT NULL,
        "app_id" uuid NOT NULL,
        "name" text NOT NULL,
        "legal_name" text NOT NULL,
        "trade_name" text NOT NULL,
        "company_type" text NOT NULL,
        "tax_type" text NOT NULL,
        "tax_value" text NOT NULL,
        "tax_condition" text NOT NULL,
        "operation_country" text NOT NULL,
        "legal_address" jsonb NOT NULL,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "deleted_at" TIMESTAMP WITH TIME ZONE,
        CONSTRAINT "PK_companies" PRIMARY KEY ("id"),
        CONSTRAINT "FK_companies_app" FOREIGN KEY ("app_id") REFERENCES "applications"("id")
      )`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "uq_companies_app_tax" ON "companies" ("app_id", "tax_type", "tax_value") WHERE "deleted_at" IS NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_companies_app_created" ON "companies" ("app_id", "created_at", "id")`,
    );

    await queryRunner.query(`
      CREATE TABLE "user_kyc_data" (
        "user_id" uuid NOT NULL,
        "id" uuid NOT NULL,
        "app_id" uuid NOT NULL,
        "civil_status" text NOT NULL,
        "is_pep" boolean,
        "is_soauif" boolean,
        "is_black_listed" boolean,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_user_kyc_data" PRIMARY KEY ("user_id"),
        CONSTRAINT "FK_user_kyc_data_user" FOREIGN KEY ("user_id") REFERENCES "users"("id")
      )`);
    await queryRunner.query(`
      CREATE TABLE "company_kyc_data" (
        "company_id" uuid NOT NULL,
        "app_id" uuid NOT NULL,
        "datos_basicos" jsonb,
        "estructura_corporativa" jsonb,
        "gestion_de_riesgo" jsonb,
        "monitoreo_de_cumplimiento" jsonb,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_company_kyc_data" PRIMARY KEY ("company_id"),
        CONSTRAINT "FK_company_kyc_data_company" FOREIGN KEY ("company_id") REFERENCES "companies"("id")
      )`);
    await queryRunner.query(`
      CREATE TABLE "kyc_history" (
        "id" BIGSERIAL NOT NULL,
        "app_id" uuid NOT NULL,
        "owner_type" text NOT NULL,
        "owner_id" uuid NOT NULL,
        "section" text NOT NULL,
        "previous" jsonb,
        "current" jsonb NOT NULL,
        "actor" text NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_kyc_history" PRIMARY KEY ("id"),
        CONSTRAINT "CHK_kyc_history_owner_type" CHECK ("owner_type" IN ('USER', 'COMPANY'))
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_kyc_history_owner" ON "kyc_history" ("app_id", "owner_id", "id")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "kyc_history"`);
    await queryRunner.query(`DROP TABLE "company_kyc_data"`);
    await queryRunner.query(`DROP TABLE "user_kyc_data"`);
    await queryRunner.query(`DROP TABLE "companies"`);
    await queryRunner.query(`DROP TABLE "users"`);
  }
}
