import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { decodeCursor, type CursorPosition } from '../http/pagination.js';

/** The PostgreSQL error behind a TypeORM QueryFailedError (or the error itself, from pg directly). */
export function pgErrorOf(error: unknown): {
  code?: string;
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
