import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { DEFAULT_PAGE_SIZE, type Page } from '#common/http/pagination.js';
import type { KycHistoryEntryDto } from '#modules/kyc/history/kyc-history.dto.js';
import { kycHistoryPage, recordKycChange } from '#modules/kyc/history/kyc-history.js';
import { CompaniesService } from './companies.service.js';
import type { CompanyKycDataDto, KycSection } from './dto/company-kyc-data.dto.js';
import { CompanyKycDataEntity } from './entities/company-kyc-data.entity.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';

/** A company's KYC data, four sections; every change leaves a history entry (who, when, before, after). */
@Injectable()
export class CompanyKycDataService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly companies: CompaniesService,
  ) {}

  /** CreateCompanyKYCDataRequest: the datosBasicos section, once. */
  async create(
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
  async updateSection(
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

  /** A read of KYC data: audited (outcome `read`) in a transaction of its own. */
  async get(principal: Principal, companyId: string): Promise<CompanyKycDataDto> {
    return this.dataSource.transaction(async (manager) => {
      companyId = (await this.companies.find(manager, principal, companyId)).id;
      const row = await manager.findOneBy(CompanyKycDataEntity, { companyId });
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'kyc_data',
        resourceId: companyId,
        outcome: 'read',
      });
      return companyView(companyId, row);
    });
  }

  async history(
    principal: Principal,
    companyId: string,
    limit = DEFAULT_PAGE_SIZE,
    cursor?: string,
  ): Promise<Page<KycHistoryEntryDto>> {
    return this.dataSource.transaction(async (manager) => {
      companyId = (await this.companies.find(manager, principal, companyId)).id;
      const page = await kycHistoryPage(manager, principal, 'COMPANY', companyId, limit, cursor);
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'kyc_history',
        resourceId: companyId,
        outcome: 'read',
      });
      return page;
    });
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
    await recordKycChange(manager, principal, 'COMPANY', companyId, section, previous, data);
    await auditAppend(manager, requestActor(principal), {
      resourceType: 'kyc_data',
      resourceId: companyId,
      outcome: existing ? 'updated' : 'created',
    });
    return companyView(companyId, await manager.findOneBy(CompanyKycDataEntity, { companyId }));
  }
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
