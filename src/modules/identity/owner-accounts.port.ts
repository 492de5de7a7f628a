/**
 * What identity needs to know about wallet accounts, without importing the
 * wallet (dependencies point transfers → wallet → identity). The wallet module
 * provides an implementation under OWNER_ACCOUNTS; until it does, owners have no
 * account.
 */
export const OWNER_ACCOUNTS = Symbol('OWNER_ACCOUNTS');

export interface OwnerAccountView {
  ownerType: 'USER' | 'COMPANY';
  uuid: string;
  status: string;
  created: string;
  updated: string;
  cvu: string;
  alias: string;
  currency: string;
  balance: number;
  monthlyDepositOperation: number;
  monthlyWithdrawOperation: number;
}

export interface OwnerAccounts {
  /** The wallet account of each owner that has one. */
  accountsOf(appId: string, ownerIds: readonly string[]): Promise<Map<string, OwnerAccountView>>;
  /** Whether the owner holds an account with money in it (or in flight): then it cannot be deleted. */
  holdsMoney(appId: string, ownerId: string): Promise<boolean>;
}

export const NO_ACCOUNTS: OwnerAccounts = {
  accountsOf: async () => new Map(),
  holdsMoney: async () => false,
};
