import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { pollUntil } from './poll.js';

/** A fresh database for one test file, cloned from the migrated template (much faster than migrating). */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_PG_ADMIN_URL;
  const template = process.env.TEST_TEMPLATE_DB;
  if (!adminUrl || !template) throw new Error('the global test setup did not run');
  const name = `wallet_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    // Two files cloning at once contend on the template; retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        break;
      } catch (error) {
        if (attempt >= 20 || !String((error as Error).message).includes('is being accessed by other users'))
          throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 + attempt * 50));
      }
    }
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await client.end();
    },
  };
}

/** An empty database (no migration applied), for a test that runs the migrations itself. */
export async function createEmptyDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_PG_ADMIN_URL;
  if (!adminUrl) throw new Error('the global test setup did not run');
  const name = `wallet_e_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await client.end();
    },
  };
}

/** A transaction of the test's own, held open after `statements`, so a request can be made to wait for it. */
export interface HeldTransaction {
  /**
   * Resolves once `count` (by default one) other backends wait for this transaction's locks, directly or queued
   * behind another waiter.
   */
  untilWaiting: (count?: number) => Promise<void>;
  /** How many other backends wait for this transaction's locks now, directly or queued behind another waiter. */
  waiting: () => Promise<number>;
  commit: () => Promise<void>;
  /** Rolls back unless committed, and gives the connection back. */
  release: () => Promise<void>;
}

export async function holdTransaction(
  dataSource: DataSource,
  statements: [string, unknown[]][],
): Promise<HeldTransaction> {
  const held = dataSource.createQueryRunner();
  await held.connect();
  await held.startTransaction();
  for (const [sql, params] of statements) await held.query(sql, params);
  const [{ pid }] = (await held.query('SELECT pg_backend_pid() AS pid')) as { pid: number }[];
  const waiting = async (): Promise<number> => {
    // Those that wait for it, and those queued behind them (a second waiter for a row waits for the first).
    const [row] = (await dataSource.query(
      `WITH RECURSIVE waiting(pid) AS (
         SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))
         UNION
         SELECT a.pid FROM pg_stat_activity a JOIN waiting w ON w.pid = ANY(pg_blocking_pids(a.pid))
       )
       SELECT count(*)::int AS n FROM waiting`,
      [pid],
    )) as { n: number }[];
    return row.n;
  };
  return {
    // Up to 30 s: the waiters are often CLI processes, which start Nest and connect before they reach the lock, and
    // took over 10 s on a loaded machine. Only a test that fails waits that long.
    untilWaiting: async (count = 1) => {
      await pollUntil(
        'a transaction waiting for the held one',
        async () => (await waiting()) >= count,
        30_000,
        20,
      );
    },
    waiting,
    commit: () => held.commitTransaction(),
    release: async () => {
      if (held.isTransactionActive) await held.rollbackTransaction();
      await held.release();
    },
  };
}

/**
 * Makes every DELETE from `table` fail (a raised exception) while 1 to `left` of the rows that `where` selects
 * remain: a run that deletes them in batches fails part way, after its first batches. `where` is the test's own
 * SQL. Answers the function that removes the fault.
 */
export async function failDeletesWhenLeft(
  dataSource: DataSource,
  table: string,
  where: string,
  left: number,
): Promise<() => Promise<void>> {
  const name = `test_fail_delete_${randomBytes(8).toString('hex')}`;
  await dataSource.query(
    `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $f$
     BEGIN
       IF (SELECT count(*) FROM ${table} WHERE ${where}) BETWEEN 1 AND ${left} THEN
         RAISE EXCEPTION 'a delete the test refuses';
       END IF;
       RETURN NULL;
     END $f$`,
  );
  await dataSource.query(
    `CREATE TRIGGER ${name} BEFORE DELETE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${name}()`,
  );
  return async () => {
    await dataSource.query(`DROP TRIGGER ${name} ON ${table}`);
    await dataSource.query(`DROP FUNCTION ${name}()`);
  };
}

/**
 * Commits `sql` (the test's own, in a transaction that holds `table` exclusively) right after a write's commit and
 * before anything the write's request reads after it (decision 0094). The write is held as it appends its audit
 * record, its last insert (a lock on audit_records); the second transaction queues for ACCESS EXCLUSIVE on `table`
 * behind the write's transaction; then the write goes on and commits, and the second transaction gets `table`. A
 * read of `table` after the write's commit waits behind it and sees `sql`'s change; a read inside the write's
 * transaction came before. `sql` runs once the answer came or a read waits behind it. Answers `send`'s response.
 */
export async function commitRightAfterWrite<T>(
  dataSource: DataSource,
  send: () => PromiseLike<T>,
  table: string,
  sql: string,
  params: unknown[],
): Promise<T> {
  const audit = await holdTransaction(dataSource, [['LOCK TABLE audit_records IN SHARE MODE', []]]);
  let auditHeld = true;
  const releaseAudit = async () => {
    if (auditHeld) await audit.release();
    auditHeld = false;
  };
  const change = dataSource.createQueryRunner();
  let answered = false;
  const response = Promise.resolve(send()).then((value) => {
    answered = true;
    return value;
  });
  response.catch(() => undefined); // awaited below; a failure before then must not be an unhandled rejection
  const until = (done: () => Promise<boolean>, what: string) => pollUntil(what, done, 10_000, 20);
  try {
    await audit.untilWaiting(); // the write waits to append its audit record
    await change.connect();
    const [{ pid }] = (await change.query('SELECT pg_backend_pid() AS pid')) as { pid: number }[];
    await change.startTransaction();
    const locked = change.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    await until(async () => {
      const [row] = (await dataSource.query(`SELECT cardinality(pg_blocking_pids($1)) > 0 AS waits`, [
        pid,
      ])) as { waits: boolean }[];
      return row.waits;
    }, `the change waits for ${table} behind the write`);
    await releaseAudit(); // the write appends its record and commits; the change gets the table
    await locked;
    await until(async () => {
      if (answered) return true;
      const [row] = (await dataSource.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`,
        [pid],
      )) as { n: number }[];
      return row.n > 0;
    }, 'the answer, or a read waiting behind the change');
    await change.query(sql, params);
    await change.commitTransaction();
    return await response;
  } finally {
    if (change.isTransactionActive) await change.rollbackTransaction();
    await change.release();
    await releaseAudit();
  }
}
