import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { KYC_OWNERS, type KycOwnerLookup, type OwnerType } from './kyc-owners.port.js';

/** The owner of a document or session, a user or a company, through the lookups users and companies provide. */
@Injectable()
export class KycOwners {
  constructor(
    @Inject(KYC_OWNERS.USER) private readonly users: KycOwnerLookup,
    @Inject(KYC_OWNERS.COMPANY) private readonly companies: KycOwnerLookup,
  ) {}

  /**
   * The owner the principal reaches (its id as stored), or the owner's NotFoundError; locked when asked, so a
   * deletion of the owner waits for the caller's transaction (and the caller for the deletion's).
   */
  find(
    manager: EntityManager,
    principal: Principal,
    ownerType: OwnerType,
    id: string,
    lock = false,
  ): Promise<{ id: string }> {
    return (ownerType === 'USER' ? this.users : this.companies).find(manager, principal, id, lock);
  }
}
