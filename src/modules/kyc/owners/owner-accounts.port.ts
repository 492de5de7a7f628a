import type { EntityManager } from 'typeorm';

/**
 * What users and companies need to know about wallet accounts, without importing
 * the wallet (dependencies point transfers → wallet → users, companies → kyc).
 * The wallet provides it (WalletReadModule). It is required: a process that
 * loads users or companies without it fails at boot, rather than deleting an
 * owner whose account holds money (docs/decisions/0026-identity-modules.md).
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
  /** The wallet account of each owner that has one; read through `manager` when given (a caller's transaction). */
  accountsOf(
    appId: string,
    ownerIds: readonly string[],
    manager?: EntityManager,
  ): Promise<Map<string, OwnerAccountView>>;
  /**
   * Inside the owner's deletion transaction: locks the owner's accounts; when one holds money answers
   * `{refused: 'holds-money'}`, when one has a transfer not yet settled `{refused: 'in-flight'}`, and changes
   * nothing; otherwise closes them (DELETED) and answers their ids (`{closed}`, for the audit trail).
   */
  closeForOwnerDeletion(
    manager: EntityManager,
    appId: string,
    ownerId: string,
  ): Promise<{ refused: 'holds-money' | 'in-flight' } | { closed: readonly string[] }>;
}
