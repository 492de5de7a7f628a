import type { EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';

/** Who owns KYC documents and sessions. */
export type OwnerType = 'USER' | 'COMPANY';

/**
 * How kyc reaches the owner of a document or session without importing users
 * or companies (they import kyc): each provides its lookup under its type's
 * token (UsersKycOwnersModule, CompaniesKycOwnersModule). KycModule requires
 * both, so a process that loads it without them fails at boot.
 */
export const KYC_OWNERS: Readonly<Record<OwnerType, symbol>> = {
  USER: Symbol('KYC_OWNERS.USER'),
  COMPANY: Symbol('KYC_OWNERS.COMPANY'),
};

export interface KycOwnerLookup {
  /** The owner the principal reaches (its id as stored), locked when asked; otherwise a NotFoundError. */
  find(manager: EntityManager, principal: Principal, id: string, lock?: boolean): Promise<{ id: string }>;
}
