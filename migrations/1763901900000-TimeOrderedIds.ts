import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionDefinitions, loadFunction } from './sql.js';

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
        '4e8e9c6c93df939ed6a36f16c0ca48bb4d7341e539a6e07374556cfce8ef7022',
      ),
    );
  }

  /**
   * The random ids back: each function as this migration left it (which later migrations' `down`s restore
   * first), read from the database, with uuidv7() back to gen_random_uuid(), the one change `up` made to it.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    const live = await functionDefinitions((sql, params) => queryRunner.query(sql, params));
    for (const name of ['wallet_transfer_try', 'wallet_write_internal']) {
      await queryRunner.query(live[name].replaceAll('uuidv7()', 'gen_random_uuid()'));
    }
  }
}
