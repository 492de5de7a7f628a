import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '../../../common/auth/principal.js';
import {
  ForbiddenError,
  NotFoundError,
  ValidationFailedError,
} from '../../../common/errors/domain-errors.js';
import { DEFAULT_PAGE_SIZE, type Page } from '../../../common/http/pagination.js';
import { CompaniesService } from '../companies/companies.service.js';
import { UsersService } from '../users/users.service.js';
import type {
  CompanyKycDataDto,
  CreateUserKycDataDto,
  KycHistoryEntryDto,
  KycSection,
  UpdateUserKycDataDto,
  UserKycDataDto,
} from './dto/kyc.dto.js';
import { CompanyKycDataEntity, KycHistoryEntity, UserKycDataEntity } from './entities/kyc-data.entity.js';

const actorOf = (principal: Principal) =>
  principal.kind === 'client' ? `client:${principal.appId}` : `subject:${principal.subject}`;

/** KYC data of users and companies; every change leaves a history entry (who, when, before, after). */
@Injectable()
export class KycDataService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly users: UsersService,
    private readonly companies: CompaniesService,
  ) {}

  async createForUser(
    principal: Principal,
    userId: string,
    input: CreateUserKycDataDto,
  ): Promise<UserKycDataDto> {
    return this.dataSource.transaction(async (manager) => {
      // The stored id (lower case), whatever the case of the path.
      userId = (await this.users.find(manager, principal, userId, true)).id;
      if (await manager.existsBy(UserKycDataEntity, { userId })) {
        throw ValidationFailedError.single(
          '',
          'duplicate',
          'the user already has KYC data: modify it with PATCH',
        );
      }
      const row = manager.create(UserKycDataEntity, {
        userId,
        id: randomUUID(),
        appId: principal.appId,
        civilStatus: input.civilStatus,
        isPep: input.isPep,
        isSOAUIF: input.isSOAUIF,
        isBlackListed: null,
      });
      await manager.insert(UserKycDataEntity, row);
      const view = userView(row);
      await this.record(manager, principal, 'USER', userId, 'kycData', null, view);
      return view;
    });
  }

  async getForUser(principal: Principal, userId: string): Promise<UserKycDataDto> {
    userId = (await this.users.find(this.dataSource.manager, principal, userId)).id;
    const row = await this.dataSource.getRepository(UserKycDataEntity).findOneBy({ userId });
    return row
      ? userView(row)
      : { uuid: null, userId, civilStatus: null, isPep: null, isSOAUIF: null, isBlackListed: null };
  }

  async updateForUser(
    principal: Principal,
    userId: string,
    input: UpdateUserKycDataDto,
  ): Promise<UserKycDataDto> {
    if (input.isBlackListed !== undefined && principal.kind !== 'client') {
      throw new ForbiddenError(
        'INSUFFICIENT_PERMISSIONS',
        'isBlackListed is set by the application (client credentials)',
      );
    }
    return this.dataSource.transaction(async (manager) => {
      userId = (await this.users.find(manager, principal, userId, true)).id;
      const row = await manager.findOne(UserKycDataEntity, {
        where: { userId },
        lock: { mode: 'pessimistic_write' },
      });
      if (!row) throw new NotFoundError(userId, 'The user has no KYC data yet: create it with POST');
      const previous = userView(row);
      const unchanged =
        (input.civilStatus === undefined || input.civilStatus === row.civilStatus) &&
        (input.isPep === undefined || input.isPep === row.isPep) &&
        (input.isSOAUIF === undefined || input.isSOAUIF === row.isSOAUIF) &&
        (input.isBlackListed === undefined || input.isBlackListed === row.isBlackListed);
      if (unchanged) return previous; // nothing changed: no history entry
      if (input.civilStatus !== undefined) row.civilStatus = input.civilStatus;
      if (input.isPep !== undefined) row.isPep = input.isPep;
      if (input.isSOAUIF !== undefined) row.isSOAUIF = input.isSOAUIF;
      if (input.isBlackListed !== undefined) row.isBlackListed = input.isBlackListed;
      await manager.update(
        UserKycDataEntity,
        { userId },
        {
          civilStatus: row.civilStatus,
          isPep: row.isPep,
          isSOAUIF: row.isSOAUIF,
          isBlackListed: row.isBlackListed,
        },
      );
      const current = userView(row);
      await this.record(manager, principal, 'USER', userId, 'kycData', previous, current);
      return current;
    });
  }

  /** CreateCompanyKYCDataRequest: the datosBasicos section, once. */
  async createForCompany(
    principal: Principal,
    companyId: string,
    data: Record<string, unknown>,
  ): Promise<CompanyKycDataDto> {
    return this.dataSource.transaction(async (manager) => {
      companyId = (await this.companies.find(manager, principal, companyId, true)).id;
      const existing = await manager.findOneBy(CompanyKycDataEntity, { companyId });
      if (existing?.datosBasicos) {
        throw ValidationFailedError.single(
          'data',
          'duplicate',
          'datosBasicos already exists: modify it with PATCH',
        );
      }
      return this.writeSection(manager, principal, companyId, existing, 'datosBasicos', data);
    });
  }

  /** UpdateKYCDataRequest: replaces one section. */
  async updateCompanySection(
    principal: Principal,
    companyId: string,
    section: KycSection,
    data: Record<string, unknown>,
  ): Promise<CompanyKycDataDto> {
    return this.dataSource.transaction(async (manager) => {
      companyId = (await this.companies.find(manager, principal, companyId, true)).id;
      const existing = await manager.findOneBy(CompanyKycDataEntity, { companyId });
      return this.writeSection(manager, principal, companyId, existing, section, data);
    });
  }

  async getForCompany(principal: Principal, companyId: string): Promise<CompanyKycDataDto> {
    companyId = (await this.companies.find(this.dataSource.manager, principal, companyId)).id;
    const row = await this.dataSource.getRepository(CompanyKycDataEntity).findOneBy({ companyId });
    return companyView(companyId, row);
  }

  async history(
    principal: Principal,
    ownerType: 'USER' | 'COMPANY',
    ownerId: string,
    limit = DEFAULT_PAGE_SIZE,
    cursor?: string,
  ): Promise<Page<KycHistoryEntryDto>> {
    const manager = this.dataSource.manager;
    ownerId = (
      ownerType === 'USER'
        ? await this.users.find(manager, principal, ownerId)
        : await this.companies.find(manager, principal, ownerId)
    ).id;
    if (cursor !== undefined && !/^\d{1,18}$/.test(cursor)) {
      throw ValidationFailedError.single('cursor', 'invalid', 'cursor is not valid');
    }
    const query = this.dataSource
      .getRepository(KycHistoryEntity)
      .createQueryBuilder('h')
      .where('h.app_id = :appId AND h.owner_id = :ownerId AND h.owner_type = :ownerType', {
        appId: principal.appId,
        ownerId,
        ownerType,
      })
      .orderBy('h.id', 'ASC')
      .take(limit + 1);
    if (cursor) query.andWhere('h.id > :after', { after: cursor });
    const rows = await query.getMany();
    const more = rows.length > limit;
    const served = more ? rows.slice(0, limit) : rows;
    return {
      items: served.map((row) => ({
        id: row.id,
        ownerType: row.ownerType,
        ownerId: row.ownerId,
        section: row.section,
        previous: row.previous,
        current: row.current,
        actor: row.actor,
        at: row.createdAt.toISOString(),
      })),
      nextCursor: more ? served[served.length - 1].id : null,
    };
  }

  private async writeSection(
    manager: EntityManager,
    principal: Principal,
    companyId: string,
    existing: CompanyKycDataEntity | null,
    section: KycSection,
    data: Record<string, unknown>,
  ): Promise<CompanyKycDataDto> {
    const previous = existing?.[section] ?? null;
    if (existing) {
      await manager.update(CompanyKycDataEntity, { companyId }, { [section]: data as never });
    } else {
      await manager.insert(CompanyKycDataEntity, {
        companyId,
        appId: principal.appId,
        [section]: data as never,
      });
    }
    await this.record(manager, principal, 'COMPANY', companyId, section, previous, data);
    return companyView(companyId, await manager.findOneBy(CompanyKycDataEntity, { companyId }));
  }

  private async record(
    manager: EntityManager,
    principal: Principal,
    ownerType: 'USER' | 'COMPANY',
    ownerId: string,
    section: string,
    previous: unknown,
    current: unknown,
  ): Promise<void> {
    await manager.query(
      `INSERT INTO kyc_history (app_id, owner_type, owner_id, section, previous, current, actor)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        principal.appId,
        ownerType,
        ownerId,
        section,
        previous === null ? null : JSON.stringify(previous),
        JSON.stringify(current),
        actorOf(principal),
      ],
    );
  }
}

function userView(row: UserKycDataEntity): UserKycDataDto {
  return {
    uuid: row.id,
    userId: row.userId,
    civilStatus: row.civilStatus,
    isPep: row.isPep,
    isSOAUIF: row.isSOAUIF,
    isBlackListed: row.isBlackListed,
  };
}

function companyView(companyId: string, row: CompanyKycDataEntity | null): CompanyKycDataDto {
  return {
    companyId,
    datosBasicos: row?.datosBasicos ?? null,
    estructuraCorporativa: row?.estructuraCorporativa ?? null,
    gestionDeRiesgo: row?.gestionDeRiesgo ?? null,
    monitoreoDeCumplimiento: row?.monitoreoDeCumplimiento ?? null,
    updated: row?.updatedAt.toISOString() ?? null,
  };
}
