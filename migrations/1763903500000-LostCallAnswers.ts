import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionBefore, loadFunction } from './sql.js';

/**
 * What this migration changes, as PostgreSQL prints the functions: each pair is [the text it installs, the text it
 * replaces] (the `down` puts the second back). The new row's id comes from the request when it has one.
 */
const CHANGES: Record<'wallet_create_transfers' | 'wallet_reverse_transfer', [string, string][]> = {
  wallet_create_transfers: [
    [`    v_id := coalesce((v_item->>'id')::uuid, uuidv7());\n`, `    v_id := uuidv7();\n`],
  ],
  wallet_reverse_transfer: [
    [
      `  v_rw uuid := CASE WHEN p->>'kind' = 'return' THEN uuidv7() ELSE coalesce((p->>'id')::uuid, uuidv7()) END;
  v_rd uuid := CASE WHEN p->>'kind' = 'return' THEN coalesce((p->>'id')::uuid, uuidv7()) ELSE uuidv7() END;
`,
      `  v_rw uuid := uuidv7();
  v_rd uuid := uuidv7();
`,
    ],
  ],
};

/**
 * A money call whose answer was lost can be looked up (docs/decisions/0066-lost-call-answers.md): the new
 * transfer's id (a reversal's or a return's row the caller is answered) is made by the API and sent with the
 * request, and the functions write the row under it. A request without an id (as sent before) gets `uuidv7()` as
 * before. Every other id stays as it was.
 */
export class LostCallAnswers1763903500000 implements MigrationInterface {
  name = 'LostCallAnswers1763903500000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction(
        'wallet_create_transfers',
        'ebde3faae9a30a5384332bae3982e703f28a2ef18f7222667235ef4d7cf94c44',
      ),
    );
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        'fdf01655d4a27642ed9ceeca4033ef72bc5de76798d19939bfa76a48292eb059',
      ),
    );
  }

  /** Both functions as they were: every new row's id made by the function. */
  async down(queryRunner: QueryRunner): Promise<void> {
    for (const [name, changes] of Object.entries(CHANGES)) {
      await queryRunner.query(
        await functionBefore((sql, params) => queryRunner.query(sql, params), name, changes),
      );
    }
  }
}
