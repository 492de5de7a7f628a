import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionBefore, loadFunction } from './sql.js';

/**
 * What webhook_claim_for_delivery has that webhook_claim had not, as PostgreSQL prints it: [its text, the old
 * claim's text]. The `down` makes the old claim's whole definition from the live new one with these, instead of
 * carrying a copy of its body.
 */
const CHANGES: [string, string][] = [
  [
    `CREATE OR REPLACE FUNCTION public.webhook_claim_for_delivery(p_ids text, p_lease_ms integer)
 RETURNS TABLE(id uuid, subject text, payload jsonb, attempts integer, url text, app_id uuid)`,
    `CREATE OR REPLACE FUNCTION public.webhook_claim(p_ids text, p_lease_ms integer)
 RETURNS TABLE(id uuid, subject text, payload jsonb, attempts integer, url text)`,
  ],
  [`a.webhook_url AS url, c.app_id\n`, `a.webhook_url AS url\n`],
];

/**
 * The delivery worker's claim also answers each event's application, which the webhook signature now names
 * (`webhook-app`: docs/decisions/0076-webhook-signature-names-its-recipient.md). A new function,
 * webhook_claim_for_delivery, with the claim's body and one more column; webhook_claim keeps its result type and
 * becomes a call of the new one, so a worker still running the code before goes on claiming through a rolling
 * upgrade (its prepared statement would fail on a changed result type). A later migration drops webhook_claim.
 */
export class WebhookClaimForDelivery1763904100000 implements MigrationInterface {
  name = 'WebhookClaimForDelivery1763904100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction(
        'webhook_claim_for_delivery',
        '1ec85c557d36ac83fd550508b8142c247224c7a50081a222e372910dfc43a907',
      ),
    );
    // The wrapper's body names webhook_claim_for_delivery. Should a later change of that function's file make the
    // pin above stale (this migration then leaves the function to the later one), the wrapper is still made on a
    // fresh database: its body is checked when it is called, not now (found in review).
    await queryRunner.query(`SET check_function_bodies = off`);
    try {
      await queryRunner.query(
        loadFunction('webhook_claim', '1d8a7ac16e164c28545aaf18387bac1fbb0103bdb74d478065a6dac50ae6e001'),
      );
    } finally {
      await queryRunner.query(`RESET check_function_bodies`);
    }
  }

  /** The old claim's own body back (made from the new function's), and the new function dropped. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      await functionBefore(
        (sql, params) => queryRunner.query(sql, params),
        'webhook_claim_for_delivery',
        CHANGES,
      ),
    );
    await queryRunner.query(`DROP FUNCTION public.webhook_claim_for_delivery(text, integer)`);
  }
}
