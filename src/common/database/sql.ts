import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import type { CursorPosition } from '../http/pagination.js';

/** A PostgreSQL unique violation (23505), optionally of one named constraint or index. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const driverError =
    (error as { driverError?: { code?: string; constraint?: string } })?.driverError ?? error;
  const { code, constraint: name } = (driverError ?? {}) as { code?: string; constraint?: string };
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
