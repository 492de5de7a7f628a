import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SMS messages: one row per accepted message, per application (tenant), with
 * the sender subject, the provider's message id and the delivery receipt.
 * The rate limits count these rows (docs/decisions/0010-messaging.md).
 */
export class Messaging1763900300000 implements MigrationInterface {
  name = 'Messaging1763900300000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "sms_messages" (
        "id" uuid NOT NULL,
        "app_id" uuid NOT NULL,
        "sender_subject" uuid,
        "dnis" text NOT NULL,
        "body" text,
        "status" text NOT NULL DEFAULT 'QUEUED',
        "provider" text,
        "provider_message_id" text,
        "error_code" text,
        "mccmnc" text,
        "delivery_time" TIMESTAMP WITH TIME ZONE,
        "system_delivery_time" TIMESTAMP WITH TIME ZONE,
        "attempts" integer NOT NULL DEFAULT 0,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "submitted_at" TIMESTAMP WITH TIME ZONE,
        CONSTRAINT "PK_sms_messages" PRIMARY KEY ("id"),
        CONSTRAINT "CHK_sms_messages_dnis" CHECK ("dnis" ~ '^[0-9]{12}$'),
        CONSTRAINT "CHK_sms_messages_status" CHECK ("status" ~ '^[A-Z_]{1,20}$'),
        CONSTRAINT "FK_sms_messages_app" FOREIGN KEY ("app_id") REFERENCES "applications"("id") ON DELETE CASCADE
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_sms_messages_app_created" ON "sms_messages" ("app_id", "created_at")`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_sms_messages_app_dnis_created" ON "sms_messages" ("app_id", "dnis", "created_at")`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_sms_messages_queued" ON "sms_messages" ("created_at") WHERE "status" = 'QUEUED'`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_sms_messages_provider_message" ON "sms_messages" ("provider", "provider_message_id") WHERE "provider_message_id" IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "sms_messages"`);
  }
}
