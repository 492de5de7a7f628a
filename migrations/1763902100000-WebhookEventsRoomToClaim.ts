import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox's pages are filled to half on insert (`fillfactor` 50), so that the delivery worker's claim (a lease
 * and the attempt number, no indexed column) writes the event's new version on its own page, a HOT update that
 * adds no entry to any of the table's six indexes (docs/decisions/0045-webhook-events-fillfactor.md). A full page
 * sent each claimed version elsewhere, with a new entry in every index: the claim cost PostgreSQL about 45 µs per
 * event instead of 25. Pages written before this migration keep their fill; they are not rewritten.
 */
export class WebhookEventsRoomToClaim1763902100000 implements MigrationInterface {
  name = 'WebhookEventsRoomToClaim1763902100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_events" SET (fillfactor = 50)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_events" RESET (fillfactor)`);
  }
}
