import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The claim as workers from before decision 0076 called it, as WebhookClaimForDelivery made it: a call of
 * webhook_claim_for_delivery without the application's id. Its file is gone with it; the `down` makes it again from
 * this text.
 */
const OLD_CLAIM = `CREATE OR REPLACE FUNCTION public.webhook_claim(p_ids text, p_lease_ms integer)
 RETURNS TABLE(id uuid, subject text, payload jsonb, attempts integer, url text)
 LANGUAGE sql
AS $function$
  SELECT c.id, c.subject, c.payload, c.attempts, c.url FROM public.webhook_claim_for_delivery(p_ids, p_lease_ms) c
$function$`;

/**
 * Drops `webhook_claim`, which WebhookClaimForDelivery kept for workers still running the code before decision
 * 0076 during a rolling upgrade, as that decision said a later migration would
 * (docs/decisions/0104-old-webhook-claim-dropped.md). A worker of that code still running after this migration
 * fails its claims (function does not exist) and claims nothing: its events stay pending, and the workers of the
 * new code (the sweeper, or their own relay) deliver them. Nothing is lost; delivery waits for the new workers.
 */
export class DropOldWebhookClaim1763905700000 implements MigrationInterface {
  name = 'DropOldWebhookClaim1763905700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION IF EXISTS public.webhook_claim(text, integer)`);
  }

  /** The old claim back, as WebhookClaimForDelivery left it: a call of the new one. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(OLD_CLAIM);
  }
}
