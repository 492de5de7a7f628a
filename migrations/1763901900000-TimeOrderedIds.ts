import type { MigrationInterface, QueryRunner } from 'typeorm';
import { loadFunction } from './sql.js';

/**
 * The money path's new rows get time-ordered ids (UUID version 7, PostgreSQL 18's uuidv7()) instead of random
 * ones (version 4): a transfer's two rows, its journal entry and its outbox event
 * (docs/decisions/0042-time-ordered-ids.md). A random key lands on a random leaf of its primary-key index, so
 * after every checkpoint each insertion dirties another leaf and writes a full page image to the WAL; a
 * time-ordered key lands on the rightmost leaf, which PostgreSQL keeps at hand. Ids already written stay.
 */
export class TimeOrderedIds1763901900000 implements MigrationInterface {
  name = 'TimeOrderedIds1763901900000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const [{ version }] = (await queryRunner.query(
      `SELECT current_setting('server_version_num')::int AS version`,
    )) as { version: number }[];
    if (version < 180000) {
      throw new Error(
        `PostgreSQL 18 or newer is needed (uuidv7()); this server is ${version}: see docs/decisions/0042-time-ordered-ids.md`,
      );
    }
    await queryRunner.query(
      loadFunction('wallet_transfer_try', '550c36924592385b43d1a5a4b44c491350ffa1e66fef9b8e9e31313a55d1d408'),
    );
    await queryRunner.query(
      loadFunction(
        'wallet_write_internal',
        '8a1ffb7a511c42b940e6607cea4a09ff105b8a5703e56ae680b8360a95bcc701',
      ),
    );
  }

  /**
   * The random ids back: each function as this migration left it (which later migrations' `down`s restore
   * first), read from the database, with uuidv7() back to gen_random_uuid(), the one change `up` made to it.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    for (const name of ['wallet_transfer_try', 'wallet_write_internal']) {
      const [{ definition }] = (await queryRunner.query(
        `SELECT pg_get_functiondef(p.oid) AS definition FROM pg_proc p
           JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' AND p.proname = $1`,
        [name],
      )) as { definition: string }[];
      await queryRunner.query(definition.replaceAll('uuidv7()', 'gen_random_uuid()'));
    }
  }
}
