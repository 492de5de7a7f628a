import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The webhook outbox: one row per event (written in the transaction of the
 * change that causes it) and one row per delivery attempt. A trigger NOTIFYs
 * the relay on insert; NOTIFY is delivered only on commit, so a rolled-back
 * change never wakes anyone.
 */
export class WebhookOutbox1763900100000 implements MigrationInterface {
  name = 'WebhookOutbox1763900100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "webhook_events" (
        "id" uuid NOT NULL,
        "seq" BIGSERIAL NOT NULL,
        "app_id" uuid NOT NULL,
        "event" text NOT NULL,
        "subject" text,
        "payload" jsonb NOT NULL,
        "status" text NOT NULL DEFAULT 'pending',
        "attempts" integer NOT NULL DEFAULT 0,
        "generation" integer NOT NULL DEFAULT 0,
        "replays" integer NOT NULL DEFAULT 0,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "next_attempt_at" TIMESTAMP WITH TIME ZONE,
        "lease_until" TIMESTAMP WITH TIME ZONE,
        "last_attempt_at" TIMESTAMP WITH TIME ZONE,
        "delivered_at" TIMESTAMP WITH TIME ZONE,
        "last_error" text,
        CONSTRAINT "PK_webhook_events" PRIMARY KEY ("id"),
        CONSTRAINT "UQ_webhook_events_seq" UNIQUE ("seq"),
        CONSTRAINT "CHK_webhook_events_status" CHECK ("status" IN ('pending', 'delivered', 'failed')),
        CONSTRAINT "FK_webhook_events_app" FOREIGN KEY ("app_id") REFERENCES "applications"("id") ON DELETE CASCADE
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_webhook_events_pending" ON "webhook_events" ("next_attempt_at") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_webhook_events_subject" ON "webhook_events" ("app_id", "subject", "seq") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX "idx_webhook_events_app_created" ON "webhook_events" ("app_id", "created_at")`,
    );
    await queryRunner.query(`
      CREATE TABLE "webhook_attempts" (
        "id" BIGSERIAL NOT NULL,
        "event_id" uuid NOT NULL,
        "attempt" integer NOT NULL,
        "url" text,
        "started_at" TIMESTAMP WITH TIME ZONE NOT NULL,
        "duration_ms" integer NOT NULL,
        "status_code" integer,
        "outcome" text NOT NULL,
        "error" text,
        CONSTRAINT "PK_webhook_attempts" PRIMARY KEY ("id"),
        CONSTRAINT "CHK_webhook_attempts_outcome" CHECK ("outcome" IN ('delivered', 'failed')),
        CONSTRAINT "FK_webhook_attempts_event" FOREIGN KEY ("event_id") REFERENCES "webhook_events"("id") ON DELETE CASCADE
      )`);
    await queryRunner.query(
      `CREATE INDEX "idx_webhook_attempts_event" ON "webhook_attempts" ("event_id", "attempt")`,
    );
    await queryRunner.query(`
      CREATE FUNCTION "notify_webhook_event"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('webhook_events', NEW.id::text || '.' || NEW.generation::text);
        RETURN NEW;
      END
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER "webhook_events_notify" AFTER INSERT ON "webhook_events"
      FOR EACH ROW EXECUTE FUNCTION "notify_webhook_event"()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "webhook_events_notify" ON "webhook_events"`);
    await queryRunner.query(`DROP FUNCTION "notify_webhook_event"()`);
    await queryRunner.query(`DROP TABLE "webhook_attempts"`);
    await queryRunner.query(`DROP TABLE "webhook_events"`);
  }
}
