import type { OwnerAccountView } from '#modules/kyc/owners/owner-accounts.port.js';
import { fromDb, toJson } from '../money.js';
import type { WalletAccountEntity } from './entities/wallet-account.entity.js';

/** AccountInfo: the account, its balance and this month's operated amounts (decimal text from the database). */
export function accountView(
  account: WalletAccountEntity,
  balance: string,
  monthDeposit: string,
  monthWithdraw: string,
): OwnerAccountView {
  return {
    ownerType: account.ownerType,
    uuid: account.id,
    status: account.status,
    created: account.createdAt.toISOString(),
    updated: account.updatedAt.toISOString(),
    cvu: account.cvu,
    alias: account.alias,
    currency: account.currency,
    balance: toJson(fromDb(balance)),
    monthlyDepositOperation: toJson(fromDb(monthDeposit)),
    monthlyWithdrawOperation: toJson(fromDb(monthWithdraw)),
  };
}
