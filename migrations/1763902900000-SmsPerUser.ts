import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently } from './sql.js';

/**
 * The per-user SMS limit (SMS_USER_LIMIT_PER_HOUR, decision 0054) counts a user's messages of the last hour under
 * the application's advisory lock: an index on (app_id, sender_subject, created_at) for the messages a user token
 * sent, so the count reads that user's rows only (the application's index would scan every message of the hour).
 * Built concurrently, outside a transaction: the messages' writers go on meanwhile (decision 0070).
 */
export class SmsPerUser1763902900000 implements MigrationInterface {
  name = 'SmsPerUser1763902900000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    await createIndexConcurrently(
      (sql, params) => queryRunner.query(sql, params),
      'idx_sms_messages_app_sender_created',
      `ON "sms_messages" ("app_id", "sender_subject", "created_at") WHERE "sender_subject" IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "idx_sms_messages_app_sender_created"`);
  }
}
