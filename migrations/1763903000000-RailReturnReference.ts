import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionBefore, loadFunction } from './sql.js';

/**
 * What this migration changes in `wallet_reverse_transfer`, as PostgreSQL prints it: each pair is [the text it
 * installs, the text it replaces] (the `down` puts the second back). A return's key is claimed under the returned
 * WITHDRAW's application, and another request under it is refused at `reference`.
 */
const CHANGES: [string, string][] = [
  [
    `  v_hash text := p->>'requestHash';
  v_reused jsonb := CASE WHEN p->>'kind' = 'return' THEN jsonb_build_object('code', 'WT400', 'path', 'reference',
    'type', 'duplicate', 'message', 'this reference was used for another return') END;
`,
    `  v_hash text := p->>'requestHash';
`,
  ],
  [
    `    SELECT * INTO t FROM transfers x WHERE x.id = v_id;
    IF v_return THEN
      v_app := t.app_id; -- the application a return's reference is claimed under
    END IF;
`,
    `    SELECT * INTO t FROM transfers x WHERE x.id = v_id;
`,
  ],
  [
    `    IF v_key IS NOT NULL AND v_app IS NOT NULL THEN
      INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES (v_app, v_key, v_hash) ON CONFLICT DO NOTHING;
      IF NOT FOUND THEN
        v_answer := wallet_key_answer(v_app, v_key, v_hash);
        IF v_answer ? 'replay' THEN
          RETURN v_answer;
        ELSIF v_answer ? 'refused' THEN
          v_refusal := coalesce(v_reused, v_answer->'refused');
        END IF;
`,
    `    IF v_key IS NOT NULL THEN
      INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES (v_app, v_key, v_hash) ON CONFLICT DO NOTHING;
      IF NOT FOUND THEN
        v_answer := wallet_key_answer(v_app, v_key, v_hash);
        IF v_answer ? 'replay' THEN
          RETURN v_answer;
        END IF;
        v_refusal := coalesce(v_answer->'refused', v_refusal);
`,
  ],
  [
    `        v_refusal := coalesce(v_reused, v_answer->'refused');
        PERFORM wallet_refuse(`,
    `        v_refusal := v_answer->'refused';
        PERFORM wallet_refuse(`,
  ],
];

/**
 * `transfers return --reference` (docs/decisions/0056-rail-return-reference.md): the rail's id of a return is
 * claimed as the return's key (`return <reference>`) in `idempotency_keys`, in the return's own transaction.
 * A return has no calling application, so the function claims it under the returned WITHDRAW's application, as
 * an inbound credit's reference is claimed under its account's; the same reference with another transfer or
 * amount is refused at `reference` (duplicate), as `transfers inbound --reference` refuses one.
 */
export class RailReturnReference1763903000000 implements MigrationInterface {
  name = 'RailReturnReference1763903000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        'eb7daf9dee47a72c250529b2e8a67528025194aaa7300f4789ca74976e583579',
      ),
    );
  }

  /** The function as it was: the live one without the return's reference. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      await functionBefore(
        (sql, params) => queryRunner.query(sql, params),
        'wallet_reverse_transfer',
        CHANGES,
      ),
    );
  }
}
