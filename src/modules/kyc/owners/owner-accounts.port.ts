import type { EntityManager } from 'typeorm';

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
  /**
   * Inside the owner's deletion transaction: locks the owner's accounts; when one holds money answers
   * 'holds-money' and changes nothing, otherwise closes them (DELETED) and answers 'closed'.
   */
  closeForOwnerDeletion(
    manager: EntityManager,
    appId: string,
    ownerId: string,
  ): Promise<'holds-money' | 'closed'>;
}

export const NO_ACCOUNTS: OwnerAccounts = {
  accountsOf: async () => new Map(),
  closeForOwnerDeletion: async () => 'closed',
};
