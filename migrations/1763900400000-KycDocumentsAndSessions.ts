import type { MigrationInterface, QueryRunner } from 'typeorm';

/** KYC documents (metadata; bytes in the document storage) and KYC sessions with their steps. */
export class KycDocumentsAndSessions1763900400000 implements MigrationInterface {
  name = 'KycDocumentsAndSessions1763900400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "documents" (
        "id" uuid NOT NULL,
        "app_id" uuid NOT NULL,
        "owner_type" text NOT NULL,
        "owner_id" uuid NOT NULL,
        "name" text NOT NULL,
        "document_type" text NOT NULL,
        "content_type" text NOT NULL,
        "size" integer NOT NULL,
        "sha256" text NOT NULL,
        "storage_key" text NOT NULL,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_documents" PRIMARY KEY ("id"),
        CONSTRAINT "CHK_documents_owner_type" CHECK ("owner_type" IN ('USER', 'COMPANY'))
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_documents_owner" ON "documents" ("app_id", "owner_id", "created_at", "id")`,
    );
    await queryRunner.query(`
      CREATE TABLE "kyc_sessions" (
        "id" uuid NOT NULL,
        "app_id" uuid NOT NULL,
        "owner_type" text NOT NULL,
        "owner_id" uuid NOT NULL,
        "status" text NOT NULL DEFAULT 'PENDING',
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "completed_at" TIMESTAMP WITH TIME ZONE,
        CONSTRAINT "PK_kyc_sessions" PRIMARY KEY ("id"),
        CONSTRAINT "CHK_kyc_sessions_status" CHECK ("status" IN ('PENDING', 'IN_PROGRESS', 'APPROVED', 'REJECTED')),
        CONSTRAINT "CHK_kyc_sessions_owner_type" CHECK ("owner_type" IN ('USER', 'COMPANY'))
      )`);
    await queryRunner.query(`CREATE INDEX "idx_kyc_sessions_owner" ON "kyc_sessions" ("app_id", "owner_id")`);
    await queryRunner.query(`
      CREATE TABLE "kyc_session_steps" (
        "session_id" uuid NOT NULL,
        "step" text NOT NULL,
        "position" integer NOT NULL,
        "status" text NOT NULL DEFAULT 'PENDING',
        "document_id" uuid,
        "submitted_at" TIMESTAMP WITH TIME ZONE,
        "completed_at" TIMESTAMP WITH TIME ZONE,
        "failure_reason" text,
        CONSTRAINT "PK_kyc_session_steps" PRIMARY KEY ("session_id", "step"),
        CONSTRAINT "CHK_kyc_session_steps_status" CHECK ("status" IN ('PENDING', 'SUCCESS', 'FAILED')),
        CONSTRAINT "FK_kyc_session_steps_session" FOREIGN KEY ("session_id") REFERENCES "kyc_sessions"("id") ON DELETE CASCADE
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_kyc_session_steps_due" ON "kyc_session_steps" ("submitted_at") WHERE "status" = 'PENDING' AND "submitted_at" IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "kyc_session_steps"`);
    await queryRunner.query(`DROP TABLE "kyc_sessions"`);
    await queryRunner.query(`DROP TABLE "documents"`);
  }
}
