import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently } from './sql.js';

/**
 * Reads that must be index range scans (docs/decisions/0064-events-and-audit-reads.md):
 * - the events feed filtered by type (`GET /v1/events?type=`): the application's index (app_id, created_at, id)
 *   becomes (app_id, event, created_at, id). A typed page is one range of it; the untyped feed merges one range
 *   per event type. Replaced, not added: the outbox is on the webhook hot path, where a seventh index would cost
 *   an entry at the insert and at each record of every event.
 * - the pruner's index on created_at holds only events no longer pending (what the pruner deletes): an event's
 *   insert no longer writes an entry there, and the feed's plans cannot take it for the application's index.
 * - the audit trail of every application (`audit list` without `--app`): an index on (at, id), the list's order.
 *   A resource without `--app` needs none: the index (app_id, resource_id, at, id) is read with a skip scan.
 * Built and dropped concurrently, outside a transaction: transfers write both tables, and a plain CREATE INDEX
 * would hold every transfer until it ends (decision 0070). Each step can run again after a failure: the old
 * pruner index is dropped and its partial form built under the same name.
 */
export class EventsAndAuditReads1763903300000 implements MigrationInterface {
  name = 'EventsAndAuditReads1763903300000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    const query = (sql: string, params?: unknown[]) => queryRunner.query(sql, params);
    await createIndexConcurrently(
      query,
      'idx_webhook_events_app_event_created',
      `ON "webhook_events" ("app_id", "event", "created_at", "id")`,
    );
    await query(`DROP INDEX CONCURRENTLY IF EXISTS "idx_webhook_events_app_created"`);
    await query(`DROP INDEX CONCURRENTLY IF EXISTS "idx_webhook_events_created"`);
    await createIndexConcurrently(
      query,
      'idx_webhook_events_created',
      `ON "webhook_events" ("created_at") WHERE "status" <> 'pending'`,
    );
    await createIndexConcurrently(query, 'idx_audit_records_at', `ON "audit_records" ("at", "id")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "idx_audit_records_at"`);
    await queryRunner.query(`DROP INDEX "idx_webhook_events_created"`);
    await queryRunner.query(`CREATE INDEX "idx_webhook_events_created" ON "webhook_events" ("created_at")`);
    await queryRunner.query(
      `CREATE INDEX "idx_webhook_events_app_created" ON "webhook_events" ("app_id", "created_at", "id")`,
    );
    await queryRunner.query(`DROP INDEX "idx_webhook_events_app_event_created"`);
  }
}
