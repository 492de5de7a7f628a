import type { DataSource, EntityManager, EntityTarget, FindOptionsWhere } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { tenantWhere, tenantWhereAnd } from '#common/auth/tenancy.js';
import { oldestFirstRows } from '#common/database/sql.js';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import type { OwnerAccounts } from './owner-accounts.port.js';
import type { OwnerColumns } from './owner.columns.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';
import { ADVISORY_LOCKS, lockUntilCommit } from '#common/database/advisory-locks.js';

/**
 * The rules users and companies share as rows (docs/decisions/0009-identity.md): a client reaches its
 * application's, a subject only itself, nobody a deleted one; lists go oldest first; deletion is soft
 * and refused while the owner's account holds money.
 */

type OwnerRow = OwnerColumns & { id: string };

/** Users or companies, as the functions below need them. */
export interface OwnerKind<T extends OwnerRow> {
  entity: EntityTarget<T>;
  /** The message of the NotFoundError for one the principal does not reach. */
  notFound: string;
  /** The message of the 403 INVALID_STATE for a deletion refused while an account holds money. */
  holdsMoney: string;
  /** The same while an account has a transfer not yet settled. */
  inFlight: string;
  /** The audit trail's resource type of a deletion. */
  resource: 'user' | 'company';
}

/**
 * Self-onboarding (decision 0009): a user token's `sub` names one user or one company of its application
 * (operator contract), so the owner a subject registers takes that id only while no user and no company has it,
 * deleted ones included; otherwise 400 `duplicate` with `message`. Serialised on the id in the caller's
 * transaction, so a POST /users and a POST /companies sent together with one token cannot both pass.
 */
export async function claimSubjectId(manager: EntityManager, id: string, message: string): Promise<void> {
  await lockUntilCommit(manager, ADVISORY_LOCKS.subjectRegistration, id);
  const [row] = (await manager.query(
    'SELECT EXISTS (SELECT 1 FROM users WHERE id = $1) OR EXISTS (SELECT 1 FROM companies WHERE id = $1) AS taken',
    [id],
  )) as { taken: boolean }[];
  if (row.taken) throw ValidationFailedError.single('', 'duplicate', message);
}

/** The owner `id` as the principal reaches it, locked when asked; otherwise NotFoundError(id). */
export async function findOwner<T extends OwnerRow>(
  manager: EntityManager,
  kind: OwnerKind<T>,
  principal: Principal,
  id: string,
  lock = false,
): Promise<T> {
  const where = tenantWhereAnd<OwnerRow>(principal, ['id'], { id: id.toLowerCase() });
  if (!where) throw new NotFoundError(id, kind.notFound);
  const owner = await manager.findOne(kind.entity, {
    where: where as FindOptionsWhere<T>[],
    ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
  });
  if (!owner) throw new NotFoundError(id, kind.notFound);
  return owner;
}

/** The rows of one page of the owners the principal reaches, oldest first (`limit + 1`, for toPage). */
export function ownerPageRows<T extends OwnerRow>(
  dataSource: DataSource,
  kind: OwnerKind<T>,
  principal: Principal,
  limit: number,
  cursor: string | undefined,
): Promise<T[]> {
  const query = dataSource
    .getRepository(kind.entity)
    .createQueryBuilder('o')
    .where(tenantWhere<OwnerRow>(principal, ['id']));
  return oldestFirstRows(query, 'o', limit, cursor);
}

/**
 * Soft-deletes the owner `id` in one transaction, with its wallet accounts closed; refused (403
 * INVALID_STATE) while one of them holds money or has a transfer not yet settled.
 */
export async function deleteOwner<T extends OwnerRow>(
  dataSource: DataSource,
  accounts: OwnerAccounts,
  kind: OwnerKind<T>,
  principal: Principal,
  id: string,
): Promise<void> {
  await dataSource.transaction(async (manager) => {
    const owner = await findOwner(manager, kind, principal, id, true);
    const closing = await accounts.closeForOwnerDeletion(manager, principal.appId, owner.id);
    if ('refused' in closing) {
      throw new ForbiddenError(
        'INVALID_STATE',
        closing.refused === 'holds-money' ? kind.holdsMoney : kind.inFlight,
      );
    }
    await manager.softDelete(kind.entity, { id: owner.id } as FindOptionsWhere<T>);
    // Its accounts were closed by the same request: each has its record, as a DELETE of the account leaves.
    await auditAppend(
      manager,
      requestActor(principal),
      { resourceType: kind.resource, resourceId: owner.id, outcome: 'deleted' },
      ...closing.closed.map((accountId) => ({
        resourceType: 'account' as const,
        resourceId: accountId,
        outcome: 'deleted',
      })),
    );
  });
}
