import type { EntityManager, EntityTarget, FindOptionsWhere } from 'typeorm';
import type { Principal } from '../../../common/auth/principal.js';
import { tenantWhereAnd } from '../../../common/auth/tenancy.js';
import { ForbiddenError, NotFoundError } from '../../../common/errors/domain-errors.js';
import type { OwnerAccounts } from './owner-accounts.port.js';
import type { OwnerColumns } from './owner.columns.js';

type OwnerRow = OwnerColumns & { id: string };

/**
 * The user or company `id` as the principal reaches it (a client: its application's; a subject: only
 * itself; never a deleted one), locked when asked; otherwise NotFoundError(id, notFound).
 */
export async function findOwner<T extends OwnerRow>(
  manager: EntityManager,
  entity: EntityTarget<T>,
  principal: Principal,
  id: string,
  lock: boolean,
  notFound: string,
): Promise<T> {
  const where = tenantWhereAnd<OwnerRow>(principal, ['id'], { id: id.toLowerCase() });
  if (!where) throw new NotFoundError(id, notFound);
  const owner = await manager.findOne(entity, {
    where: where as FindOptionsWhere<T>[],
    ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
  });
  if (!owner) throw new NotFoundError(id, notFound);
  return owner;
}

/**
 * Soft-deletes a locked owner inside its transaction: refused (403 INVALID_STATE, `holdsMoney`) while one
 * of its wallet accounts holds money; otherwise its accounts are closed with it.
 */
export async function softDeleteOwner(
  manager: EntityManager,
  accounts: OwnerAccounts,
  entity: EntityTarget<OwnerRow>,
  owner: OwnerRow,
  holdsMoney: string,
): Promise<void> {
  if ((await accounts.closeForOwnerDeletion(manager, owner.appId, owner.id)) === 'holds-money') {
    throw new ForbiddenError('INVALID_STATE', holdsMoney);
  }
  await manager.softDelete(entity, { id: owner.id });
}
