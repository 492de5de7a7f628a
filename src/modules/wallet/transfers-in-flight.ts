import type { EntityManager } from 'typeorm';

/**
 * Whether one of `accountIds` has a transfer not yet settled (the clearing rail will still release, credit or
 * return money to it). An account is closed only without one: a settlement never looks at the account's status,
 * so money that arrived after the close would sit in an account no route reaches (decision 0011).
 */
export async function hasTransfersInFlight(
  manager: EntityManager,
  accountIds: readonly string[],
): Promise<boolean> {
  if (accountIds.length === 0) return false;
  const [row] = (await manager.query(
    `SELECT EXISTS (SELECT 1 FROM transfers WHERE account_id = ANY($1::uuid[])
        AND status IN ('COMMITING', 'INICIADO', 'EN_CURSO')) AS in_flight`,
    [accountIds],
  )) as { in_flight: boolean }[];
  return row.in_flight;
}
