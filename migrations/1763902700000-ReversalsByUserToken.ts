import type { MigrationInterface, QueryRunner } from 'typeorm';
import { functionDefinitions, loadFunction } from './sql.js';

/** The checks this migration adds to `wallet_reverse_transfer`, as PostgreSQL prints them (the `down` takes them out). */
const SUBJECT_CHECKS = [
  `  v_subject uuid := (p->>'subject')::uuid;\n`,
  `    -- A user token reaches only the rows of its owner's accounts (as GET /wallet/transactions/{uuid}).
    IF v_subject IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM wallet_accounts a WHERE a.id = t.account_id AND a.owner_id = v_subject) THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
    END IF;\n`,
  `      IF v_subject IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM wallet_accounts a WHERE a.id = d.account_id AND a.owner_id = v_subject) THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'FORBIDDEN',
          'message', 'only the owner of the account that received the transfer can give it back');
        EXIT checks;
      END IF;\n`,
];

/**
 * Reversals with a user token (docs/decisions/0052-reversals-by-user-token.md): `wallet_reverse_transfer` takes
 * the token's owner (`subject`) and checks that the row addressed is of one of its accounts (else not found) and
 * that the account that gives back is its own (else FORBIDDEN). An application's request (`subject` null) and a
 * return from the rail are checked as before.
 */
export class ReversalsByUserToken1763902700000 implements MigrationInterface {
  name = 'ReversalsByUserToken1763902700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        '8b6cd3737939c715edd373071f8662c28cdaf2cb0977a2eb25314a62825e1cb6',
      ),
    );
  }

  /** The function as it was: the live one without the checks this migration added. */
  async down(queryRunner: QueryRunner): Promise<void> {
    let live = (await functionDefinitions((sql, params) => queryRunner.query(sql, params)))
      .wallet_reverse_transfer;
    for (const check of SUBJECT_CHECKS) {
      if (!live.includes(check))
        throw new Error('wallet_reverse_transfer is not the one this migration installed');
      live = live.replace(check, '');
    }
    await queryRunner.query(live);
  }
}
