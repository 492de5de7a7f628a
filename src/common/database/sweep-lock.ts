import type { DataSource } from 'typeorm';
import { ADVISORY_LOCKS } from './advisory-locks.js';

/**
 * Runs `sweep` only if no other process (worker or API) is running the sweep of this `name` now: a
 * session-level `pg_try_advisory_lock` on a connection held for the sweep. A process that finds it taken
 * skips this round (the one holding it does the work); a connection that dies releases it. For sweeps that
 * check a queue and then act (find a job, remove it, enqueue again), where two at once could act twice.
 * Returns `undefined` when skipped.
 */
export async function runExclusive<T>(
  dataSource: DataSource,
  name: string,
  sweep: () => Promise<T>,
): Promise<T | undefined> {
  const runner = dataSource.createQueryRunner();
  try {
    const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [
      ADVISORY_LOCKS.sweep,
      name,
    ])) as { locked: boolean }[];
    if (!locked) return undefined;
    try {
      return await sweep();
    } finally {
      await runner
        .query('SELECT pg_advisory_unlock($1, hashtext($2))', [ADVISORY_LOCKS.sweep, name])
        .catch(() => undefined);
    }
  } finally {
    await runner.release();
  }
}
