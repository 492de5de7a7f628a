import { createHash } from 'node:crypto';
import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { decodeCursor, type CursorPosition } from '../http/pagination.js';

/** The PostgreSQL error behind a TypeORM QueryFailedError (or the error itself, from pg directly). */
export function pgErrorOf(error: unknown): {
  code?: string;
  /** ERROR, FATAL or PANIC as the server words them (localized: with lc_messages in another language, other words). */
  severity?: string;
  constraint?: string;
  detail?: string;
  hint?: string;
  message?: string;
} {
  return ((error as { driverError?: unknown })?.driverError ?? error ?? {}) as ReturnType<typeof pgErrorOf>;
}

/** A PostgreSQL unique violation (23505), optionally of one named constraint or index. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const { code, constraint: name } = pgErrorOf(error);
  return code === '23505' && (constraint === undefined || name === constraint);
}

/**
 * The name of a named statement built from its text: `prefix` and a digest of the text, so that one name never
 * stands for two texts (node-postgres refuses that) however the text was assembled.
 */
export function statementName(prefix: string, text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `${prefix}_${createHash('sha256').update(text).digest('base64url').slice(0, 22)}`;
    // A list's texts are a few dozen shapes; the bound only keeps a bug from growing it without end.
    if (statementNames.size >= 10_000) statementNames.clear();
    statementNames.set(text, name);
  }
  return name;
}
const statementNames = new Map<string, string>();

/**
 * A value from a closed set (a status, a movement type, an event type) as an SQL literal, for a named statement whose plan
 * should know it (a partial index's predicate, the value's frequency); anything outside the set is an error.
 */
export function closedSetLiteral(value: string, allowed: readonly string[]): string {
  if (!allowed.includes(value) || !/^[A-Za-z_]+$/.test(value)) {
    throw new Error(`not a value of the closed set: ${JSON.stringify(value)}`);
  }
  return `'${value}'`;
}

/**
 * The LIMIT written into a named list statement: the smallest of a few fixed sizes that holds `rows`, so that a
 * generic plan knows how few rows it reads (with LIMIT $n PostgreSQL assumes a tenth of the table, and its
 * generic plan can turn parallel) and a connection keeps a handful of texts per list shape, not one per page size.
 * The caller serves the first `rows`.
 */
export function listFetchSize(rows: number): number {
  return LIST_FETCH_SIZES.find((size) => size >= rows) ?? rows;
}
const LIST_FETCH_SIZES = [2, 11, 21, 51, 101, 201, 501];

/** Keyset pagination on (created_at, id): rows strictly after the cursor position. */
export function keysetAfter<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  alias: string,
  after: CursorPosition,
): SelectQueryBuilder<T> {
  return query.andWhere(`(${alias}.created_at, ${alias}.id) > (:afterAt, :afterId)`, {
    afterAt: after.createdAt,
    afterId: after.id,
  });
}

/**
 * The rows of one page of a list, oldest first by (created_at, id): `limit + 1` rows after the cursor's
 * position (toPage serves `limit` and tells from the extra row that more exist). A bad cursor is a 400.
 */
export function oldestFirstRows<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  alias: string,
  limit: number,
  cursor: string | undefined,
): Promise<T[]> {
  const after = decodeCursor(cursor);
  query
    .orderBy(`${alias}.created_at`, 'ASC')
    .addOrderBy(`${alias}.id`, 'ASC')
    .take(limit + 1);
  if (after) keysetAfter(query, alias, after);
  return query.getMany();
}

/**
 * A scalar subquery for a sliding-window limit counted on stored rows (`table`'s `created_at`): the seconds until
 * the `limit`-th newest row that `where` counts in the last `window` leaves it, which frees a place; null while
 * fewer are counted. The limit-th newest, not the oldest: should more be counted (a limit lowered), places free
 * only once the count is below the limit. Newest first through the caller's index, stopping at that row.
 * `table`, `where` and `window` are the caller's constants, never input; `limit` names a parameter (`$3`).
 */
export function placeFreesSql(table: string, where: string, window: string, limit: string): string {
  return `(SELECT ceil(extract(epoch FROM created_at + interval '${window}' - now()))::int FROM ${table}
     WHERE ${where} AND created_at > now() - interval '${window}'
     ORDER BY created_at DESC OFFSET ${limit}::int - 1 LIMIT 1)`;
}
