import { NotFoundError } from '../errors/domain-errors.js';
import type { Principal } from './principal.js';

/**
 * Tenant isolation in the data layer. Every stored resource carries the appId
 * of the application that created it, and resources that belong to a user or
 * company carry that owner. Repositories build their WHERE clauses from the
 * principal with `tenantWhere`, so a query can only see rows of the caller's
 * application and, for a subject token, of the subject itself.
 *
 * @param ownerKeys the entity properties that name the owner (e.g. `['id']`
 *   for a user, `['ownerId']` for an account); empty for app-level resources.
 *   A subject principal matches a row when any of them equals its subject.
 */
export function tenantWhere<T extends { appId: string }>(
  principal: Principal,
  ownerKeys: readonly (keyof T & string)[] = [],
): Partial<Record<keyof T & string, string>>[] {
  if (principal.kind === 'client' || ownerKeys.length === 0) {
    return [{ appId: principal.appId } as Partial<Record<keyof T & string, string>>];
  }
  return ownerKeys.map(
    (key) =>
      ({ appId: principal.appId, [key]: principal.subject }) as Partial<Record<keyof T & string, string>>,
  );
}

/** Whether the principal may see a resource of `appId` owned by `ownerIds` (404 otherwise, never 403). */
export function canReach(
  principal: Principal,
  resource: { appId: string; ownerIds: readonly string[] },
): boolean {
  if (resource.appId !== principal.appId) return false;
  return principal.kind === 'client' || resource.ownerIds.includes(principal.subject);
}

export function assertReachable(
  principal: Principal,
  resource: { appId: string; ownerIds: readonly string[] } | null | undefined,
  item: string,
  message = 'Resource not found',
): void {
  if (!resource || !canReach(principal, resource)) throw new NotFoundError(item, message);
}

/**
 * The tenant scopes of `principal` AND the given conditions. A scope that
 * already fixes a key to another value (a subject asking for someone else's
 * row by id) is dropped; when none is left the row is unreachable: undefined.
 */
export function tenantWhereAnd<T extends { appId: string }>(
  principal: Principal,
  ownerKeys: readonly (keyof T & string)[],
  conditions: Partial<Record<keyof T & string, string>>,
): Partial<Record<keyof T & string, string>>[] | undefined {
  const scopes = tenantWhere<T>(principal, ownerKeys).filter((scope) =>
    Object.entries(conditions).every(([key, value]) => {
      const fixed = scope[key as keyof T & string];
      return fixed === undefined || fixed === value;
    }),
  );
  return scopes.length ? scopes.map((scope) => ({ ...scope, ...conditions })) : undefined;
}
