import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import type { CursorPosition } from '../http/pagination.js';

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
