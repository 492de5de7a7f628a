import type { DataSource } from 'typeorm';

/** What a pruner deletes: the rows of `table` that `where` selects (its parameters `$1`…), named by `key`. */
export interface BatchedDelete {
  table: string;
  /** The columns that name one row, e.g. `id` or `app_id, key`. */
  key: string;
  where: string;
  params: unknown[];
  /** Rows deleted per statement. */
  batch: number;
  /** Statements at most in one run; the rest waits for the next run. Unbounded when absent. */
  maxBatches?: number;
}

/**
 * Deletes in statements of at most `batch` rows each, every one committed on its own, until a statement deletes
 * fewer than a batch or the run's budget is spent. A run never holds one long transaction, so the statement
 * timeout bounds one batch, not the backlog, and what a run deleted before a failed statement stays deleted.
 * Rows another transaction holds are skipped (SKIP LOCKED): the next run takes them, and two runs at once share
 * the work instead of waiting for each other. A failed statement ends the run with a BatchedDeleteError that says
 * how many rows the run deleted before it (decision 0078).
 */
export async function deleteInBatches(
  dataSource: DataSource,
  { table, key, where, params, batch, maxBatches = Infinity }: BatchedDelete,
): Promise<{ deleted: number; statements: number }> {
  const text = `DELETE FROM ${table} WHERE (${key}) IN (
     SELECT ${key} FROM ${table} WHERE ${where} LIMIT $${params.length + 1} FOR UPDATE SKIP LOCKED)`;
  let deleted = 0;
  let statements = 0;
  while (statements < maxBatches) {
    let count: number;
    try {
      [, count] = (await dataSource.query(text, [...params, batch])) as [unknown, number];
    } catch (error) {
      throw new BatchedDeleteError(table, deleted, statements, error);
    }
    statements += 1;
    deleted += count;
    if (count < batch) break;
  }
  return { deleted, statements };
}

/** A run that failed: `deleted` rows in `statements` statements were deleted (and committed) before `cause`. */
export class BatchedDeleteError extends Error {
  constructor(
    readonly table: string,
    readonly deleted: number,
    readonly statements: number,
    cause: unknown,
  ) {
    super(
      `deleting from ${table} failed after ${deleted} rows in ${statements} statements: ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    );
    this.name = 'BatchedDeleteError';
  }
}
