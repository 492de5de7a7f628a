import type { DataSource, EntityManager } from 'typeorm';

/**
 * The id of the transaction `manager` runs (assigned now if it has none yet), to ask after a failure whether it
 * committed ({@link transactionCommitted}). Docs/decisions/0054 (documents) and 0089 (SMS).
 */
export async function currentTransactionId(manager: EntityManager): Promise<string> {
  const [{ xid }] = (await manager.query('SELECT txid_current()::text AS xid')) as { xid: string }[];
  return xid;
}

/**
 * Whether the transaction `xid` committed: true, false (aborted, or it never got an id: nothing was written), or
 * undefined when that cannot be known (the database unreachable, the id too old, a COMMIT still under way after
 * a few seconds). A COMMIT whose connection broke may still be finishing (its WAL flush): asked until it is not
 * `in progress`. For a transaction whose COMMIT failed or whose answer was lost: the row may be there.
 */
export async function transactionCommitted(
  dataSource: DataSource,
  xid: string | undefined,
): Promise<boolean | undefined> {
  if (xid === undefined) return false;
  for (let attempt = 0; attempt < 50; attempt++) {
    const rows = (await dataSource
      .query('SELECT txid_status($1::bigint) AS status', [xid])
      .catch(() => undefined)) as { status: string | null }[] | undefined;
    const status = rows?.[0]?.status;
    if (status === 'committed') return true;
    if (status === 'aborted') return false;
    if (status !== 'in progress') return undefined;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}
