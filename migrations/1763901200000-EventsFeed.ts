import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The events feed (docs/decisions/0029-events-feed.md): an application's events are paged by
 * (created_at, id), so its index carries the id; the retention pruner finds old events by created_at.
 */
export class EventsFeed1763901200000 implements MigrationInterface {
  name = 'EventsFeed1763901200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "idx_webhook_events_app_created"`);
    await queryRunner.query(
      `CREATE INDEX "idx_webhook_events_app_created" ON "webhook_events" ("app_id", "created_at", "id")`,
    );
    await queryRunner.query(`CREATE INDEX "idx_webhook_events_created" ON "webhook_events" ("created_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "idx_webhook_events_created"`);
    await queryRunner.query(`DROP INDEX "idx_webhook_events_app_created"`);
    await queryRunner.query(
      `CREATE INDEX "idx_webhook_events_app_created" ON "webhook_events" ("app_id", "created_at")`,
    );
  }
}
