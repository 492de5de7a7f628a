import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Applications (tenants), their registered public keys, and used client-assertion ids. */
export class Foundation1763900000000 implements MigrationInterface {
  name = 'Foundation1763900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "applications" (
        "id" uuid NOT NULL,
        "name" text NOT NULL,
        "status" text NOT NULL DEFAULT 'active',
        "webhook_url" text,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_applications" PRIMARY KEY ("id"),
        CONSTRAINT "CHK_applications_status" CHECK ("status" IN ('active', 'disabled'))
      )`);
    await queryRunner.query(`
      CREATE TABLE "application_keys" (
        "app_id" uuid NOT NULL,
        "key_id" text NOT NULL,
        "public_jwk" jsonb NOT NULL,
        "status" text NOT NULL DEFAULT 'active',
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "revoked_at" TIMESTAMP WITH TIME ZONE,
        CONSTRAINT "PK_application_keys" PRIMARY KEY ("app_id", "key_id"),
        CONSTRAINT "CHK_application_keys_status" CHECK ("status" IN ('active', 'revoked')),
        CONSTRAINT "FK_application_keys_app" FOREIGN KEY ("app_id") REFERENCES "applications"("id") ON DELETE CASCADE
      )`);
    await queryRunner.query(`
      CREATE TABLE "used_assertions" (
        "app_id" uuid NOT NULL,
        "jti" text NOT NULL,
        "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
        CONSTRAINT "PK_used_assertions" PRIMARY KEY ("app_id", "jti")
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_used_assertions_expires_at" ON "used_assertions" ("expires_at")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "used_assertions"`);
    await queryRunner.query(`DROP TABLE "application_keys"`);
    await queryRunner.query(`DROP TABLE "applications"`);
  }
}
