import type { MigrationInterface, QueryRunner } from 'typeorm';
import { loadFunction } from './sql.js';

/**
 * The money path's remaining random ids become time-ordered (docs/decisions/0050-time-ordered-ids-off-the-hot-path.md,
 * after 0042): `ledger_post`'s journal entry (an external transfer's hold, its capture or release, an inbound
 * deposit, a balance adjustment) and `wallet_reverse_transfer`'s two transfer rows and events now take `uuidv7()`
 * where they took `gen_random_uuid()`. (Events written by the services and an inbound deposit's id take it in their
 * own statements: no function.)
 */
export class TimeOrderedIdsOffTheHotPath1763902500000 implements MigrationInterface {
  name = 'TimeOrderedIdsOffTheHotPath1763902500000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction('ledger_post', '9b95c003df8afbd6e305a1f232f51a444940f7b379fc48bf1b489609c883c75f'),
    );
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        '1b23e3768c5beb301c565e986bffbd8bee29989d36eb2e9587e1f7c59c1488fe',
      ),
    );
  }

  /**
   * The random ids back. The two definitions differed from the previous ones only in that call (their files'
   * headers are comments, not part of the function), so the previous ones are the live ones with `uuidv7()` put
   * back to `gen_random_uuid()`; test/migrations.e2e-spec.ts checks it against the texts of the commit before.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    for (const name of ['ledger_post', 'wallet_reverse_transfer']) {
      const [{ definition }] = (await queryRunner.query(
        `SELECT pg_get_functiondef(p.oid) AS definition
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = 'public' AND p.proname = $1`,
        [name],
      )) as { definition: string }[];
      await queryRunner.query(definition.replaceAll('uuidv7()', 'gen_random_uuid()'));
    }
  }
}
