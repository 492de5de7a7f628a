import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook attempts record the receiver's origin and path only (recordedUrl, webhook-delivery.service.ts): a query
 * string may carry the receiver's token. The attempts recorded before lose theirs too. Down keeps them as they are
 * (what was removed is gone).
 */
export class WebhookAttemptUrls1763903400000 implements MigrationInterface {
  name = 'WebhookAttemptUrls1763903400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE webhook_attempts SET url = split_part(split_part(url, '#', 1), '?', 1) WHERE url ~ '[?#]'`,
    );
  }

  async down(): Promise<void> {
    // Nothing to give back.
  }
}
