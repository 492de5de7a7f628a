import type { EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { tenantWhereAnd } from '#common/auth/tenancy.js';
import { NotFoundError } from '#common/errors/domain-errors.js';
import { WalletAccountEntity } from './entities/wallet-account.entity.js';

/**
 * The account (not deleted), scoped to the principal (the application's; a user's own), locked when asked;
 * 404 otherwise. Every account route starts here.
 */
export async function requireAccount(
  manager: EntityManager,
  principal: Principal,
  id: string,
  lock = false,
): Promise<WalletAccountEntity> {
  const where = tenantWhereAnd<WalletAccountEntity>(principal, ['ownerId'], { id: id.toLowerCase() });
  const account = where
    ? await manager.findOne(WalletAccountEntity, {
        where: where as never,
        ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
      })
    : null;
  if (!account || account.status === 'DELETED') throw new NotFoundError(id, 'Account not found');
  return account;
}
