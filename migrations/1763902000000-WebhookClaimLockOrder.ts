import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionDefinitions, loadFunction } from './sql.js';

/** The CTE this migration adds to `webhook_claim`, as PostgreSQL prints it (the `down` takes it out again). */
const LOCKED_CTE = `  ), locked AS MATERIALIZED (
    SELECT e.id, i.pending FROM webhook_events e JOIN input i ON e.id = i.id
     WHERE e.status = i.pending AND (e.lease_until IS NULL OR e.lease_until < now())
     ORDER BY e.id FOR UPDATE OF e
`;

/**
 * The delivery worker's claim locks the events it may change in id order before changing them
 * (docs/decisions/0044-webhook-claim-lock-order.md). Two claim batches with ids in common (a worker runs two at
 * once, and every worker its own) locked their rows in whatever order their plans met them, so they could
 * deadlock: PostgreSQL broke the cycle after `deadlock_timeout` (a second's stall) and the batch was tried
 * again, so nothing was lost, but every delivery of both batches waited.
 */
export class WebhookClaimLockOrder1763902000000 implements MigrationInterface {
  name = 'WebhookClaimLockOrder1763902000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction('webhook_claim', 'b09ccb620967d938ec69b34769a0210836b808c8e9405262184e6469c9d956e4'),
    );
  }

  /** The claim as it was: the function this migration left, read from the database, without the lock. */
  async down(queryRunner: QueryRunner): Promise<void> {
    const live = (await functionDefinitions((sql, params) => queryRunner.query(sql, params))).webhook_claim;
    if (!live.includes(LOCKED_CTE)) throw new Error('webhook_claim is not the one this migration installed');
    await queryRunner.query(live.replace(LOCKED_CTE, '').replaceAll('FROM locked i', 'FROM input i'));
  }
}
