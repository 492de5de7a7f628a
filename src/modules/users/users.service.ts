import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { DEFAULT_PAGE_SIZE, toPage, type Page } from '#common/http/pagination.js';
import { isUniqueViolation } from '#common/database/sql.js';
import {
  OWNER_ACCOUNTS,
  type OwnerAccounts,
  type OwnerAccountView,
} from '#modules/kyc/owners/owner-accounts.port.js';
import {
  claimSubjectId,
  deleteOwner,
  findOwner,
  ownerPageRows,
  type OwnerKind,
} from '#modules/kyc/owners/owner-rows.js';
import { refuseOwnIdentityChange } from '#modules/kyc/owners/owner-identity.js';
import { cuitProblem, normalizeTaxId } from '#modules/kyc/tax-id.js';
import type { CreateUserDto, UpdateUserDto, UserResponseDto } from './dto/user.dto.js';
import { UserEntity } from './entities/user.entity.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';

const TAX_CONDITION_OUT: Record<string, 'VAT_REGISTERED' | 'OTHERS'> = {
  vatRegistered: 'VAT_REGISTERED',
  others: 'OTHERS',
};
const CATEGORY_OUT: Record<string, string> = {
  consumidorFinal: 'Consumidor final',
  monotributista: 'Monotributista',
  responsableInscripto: 'Responsable inscripto',
};
const SEX_FROM_SHORT: Record<string, string> = { M: 'male', F: 'female', O: 'other' };

const USERS: OwnerKind<UserEntity> = {
  entity: UserEntity,
  notFound: 'User not found',
  holdsMoney: 'The user owns an account that holds money',
  inFlight: 'The user owns an account with transfers in flight',
  resource: 'user',
};

/**
 * Natural-person users. Every query is scoped by tenantWhere: a client
 * principal reaches its application's users, a subject principal only the
 * user it is.
 */
/**
 * What identifies the user (what KYC verified; the counterparty lookup shows its names, a transfer its tax id),
 * by entity column and by its name in UpdateUserRequest: with a user token a PATCH may not change these
 * (refuseOwnIdentityChange, decisions 0054 and 0059). The user's other fields (email, sex, legalName, nationality)
 * stay its own to change.
 */
const IDENTITY_FIELDS: Readonly<Partial<Record<keyof UserEntity, string>>> = {
  firstName: 'firstName',
  lastName: 'lastName',
  birthdate: 'birthday',
  taxId: 'taxId',
};

@Injectable()
export class UsersService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(OWNER_ACCOUNTS) private readonly accounts: OwnerAccounts,
  ) {}

  async create(principal: Principal, input: CreateUserDto): Promise<UserResponseDto> {
    // A user token may register exactly the user it speaks for (self-onboarding): the new uuid is its sub.
    const id = principal.kind === 'subject' ? principal.subject : randomUUID();
    const taxId = this.checkTaxId(
      input.legalInformation.taxIdType,
      input.legalInformation.taxId,
      'legalInformation.taxId',
    );
    const user = this.dataSource.getRepository(UserEntity).create({
      id,
      appId: principal.appId,
      firstName: input.firstName.trim(),
      lastName: input.lastName.trim(),
      birthdate: input.birthdate,
      sex: input.sex,
      civilStatus: input.civilStatus,
      nationality: input.nationality,
      email: null,
      legalName: null,
      taxIdType: input.legalInformation.taxIdType,
      taxId,
      taxCondition: input.legalInformation.taxCondition,
      category: input.legalInformation.category,
      taxExempt: input.legalInformation.taxExempt,
      legalAddress: { ...input.legalAddress },
    });
    try {
      return await this.dataSource.transaction(async (manager) => {
        if (principal.kind === 'subject') {
          await claimSubjectId(manager, id, 'the user or company of this token is already registered');
        }
        await manager.insert(UserEntity, user);
        await auditAppend(manager, requestActor(principal), {
          resourceType: 'user',
          resourceId: id,
          outcome: 'created',
        });
        // Answered as stored, from inside the transaction (decision 0094): read after the commit, a deletion
        // committed in between made a committed registration answer 500.
        return this.view(await manager.findOneByOrFail(UserEntity, { id }), null);
      });
    } catch (error) {
      throw this.duplicateTaxId(error, 'legalInformation.taxId');
    }
  }

  async list(
    principal: Principal,
    limit = DEFAULT_PAGE_SIZE,
    cursor?: string,
  ): Promise<Page<UserResponseDto>> {
    const rows = await ownerPageRows(this.dataSource, USERS, principal, limit, cursor);
    const accounts = await this.accounts.accountsOf(
      principal.appId,
      rows.map((row) => row.id),
    );
    return toPage(rows, limit, (row) => this.view(row, accounts.get(row.id) ?? null));
  }

  async get(principal: Principal, id: string): Promise<UserResponseDto> {
    return this.answer(this.dataSource.manager, principal, id);
  }

  /**
   * The user as GET answers it, read through `manager`. A change answers it from inside its own transaction
   * (decision 0094): read after the commit, a deletion committed in between made a committed change answer 404.
   */
  private async answer(manager: EntityManager, principal: Principal, id: string): Promise<UserResponseDto> {
    const user = await this.find(manager, principal, id);
    return this.view(user, await this.accountOf(principal.appId, id, manager));
  }

  async update(principal: Principal, id: string, input: UpdateUserDto): Promise<UserResponseDto> {
    return this.dataSource.transaction(async (manager) => {
      const user = await this.find(manager, principal, id, true);
      // Only what differs is a change: a PATCH that sends the values the user has records `unchanged`
      // (decision 0032).
      const changes: Partial<UserEntity> = {};
      const set = <K extends keyof UserEntity>(key: K, value: UserEntity[K] | undefined) => {
        if (value !== undefined && value !== user[key]) changes[key] = value;
      };
      set('email', input.email);
      set('firstName', input.firstName?.trim());
      set('lastName', input.lastName?.trim());
      set('birthdate', input.birthday);
      set('sex', input.sex === undefined ? undefined : SEX_FROM_SHORT[input.sex]);
      set('legalName', input.legalName);
      set('nationality', input.nationality);
      set(
        'taxId',
        input.taxId === undefined ? undefined : this.checkTaxId(user.taxIdType, input.taxId, 'taxId'),
      );
      refuseOwnIdentityChange(
        principal,
        Object.entries(IDENTITY_FIELDS).flatMap(([column, field]) => (column in changes ? [field] : [])),
      );
      const changed = Object.keys(changes).length > 0;
      if (changed) {
        try {
          await manager.update(UserEntity, { id: user.id }, changes);
        } catch (error) {
          throw this.duplicateTaxId(error, 'taxId');
        }
      }
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'user',
        resourceId: user.id,
        outcome: changed ? 'updated' : 'unchanged',
      });
      return this.answer(manager, principal, id);
    });
  }

  /** Soft delete; refused while the user owns an account holding money. */
  async remove(principal: Principal, id: string): Promise<void> {
    await deleteOwner(this.dataSource, this.accounts, USERS, principal, id);
  }

  /** Whether a user exists in this application (for other modules: accounts, KYC). */
  async exists(appId: string, id: string): Promise<boolean> {
    return this.dataSource.getRepository(UserEntity).existsBy({ appId, id });
  }

  /** The user, locked when asked, or 404 (also for another application's or another owner's). */
  find(manager: EntityManager, principal: Principal, id: string, lock = false): Promise<UserEntity> {
    return findOwner(manager, USERS, principal, id, lock);
  }

  private async accountOf(
    appId: string,
    ownerId: string,
    manager?: EntityManager,
  ): Promise<OwnerAccountView | null> {
    return (await this.accounts.accountsOf(appId, [ownerId], manager)).get(ownerId) ?? null;
  }

  private checkTaxId(type: string, value: string, path: string): string {
    const problem = cuitProblem(value, ['person']);
    if (problem) throw ValidationFailedError.single(path, 'invalid', `${type.toUpperCase()} ${problem}`);
    return normalizeTaxId(value);
  }

  private duplicateTaxId(error: unknown, path: string): unknown {
    if (isUniqueViolation(error, 'uq_users_app_tax_id')) {
      return ValidationFailedError.single(path, 'duplicate', 'a user with this tax id already exists');
    }
    if (isUniqueViolation(error, 'PK_users')) {
      return ValidationFailedError.single('', 'duplicate', 'the user of this token is already registered');
    }
    return error;
  }

  view(user: UserEntity, account: OwnerAccountView | null): UserResponseDto {
    return {
      uuid: user.id,
      firstName: user.firstName,
      lastName: user.lastName,
      birthday: user.birthdate,
      civilStatus: user.civilStatus,
      legalAddress: user.legalAddress,
      account,
      legalInformation: {
        taxIdType: user.taxIdType === 'cuit' ? 'CUIT' : 'CUIL',
        taxId: user.taxId,
        taxCondition: TAX_CONDITION_OUT[user.taxCondition],
        category: CATEGORY_OUT[user.category],
        taxExempt: user.taxExempt,
      },
    };
  }
}
