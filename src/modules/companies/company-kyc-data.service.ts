import { isDeepStrictEqual } from 'node:util';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { DEFAULT_PAGE_SIZE, type Page } from '#common/http/pagination.js';
import type { KycHistoryEntryDto } from '#modules/kyc/history/kyc-history.dto.js';
import { kycHistoryPage, recordKycChange } from '#modules/kyc/history/kyc-history.js';
import { refuseOwnIdentityChange } from '#modules/kyc/owners/owner-identity.js';
import { CompaniesService } from './companies.service.js';
import type { CompanyKycDataDto, KycSection } from './dto/company-kyc-data.dto.js';
import { CompanyKycDataEntity } from './entities/company-kyc-data.entity.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';

/**
 * The sections that identify the company (decision 0059): datosBasicos (its legal name, tax id, incorporation
 * date, address) and estructuraCorporativa (the names, tax ids and birth dates of its partners, directors and
 * beneficial owners). Their contents are free-form (the interface shows no inner structure), so the section as a
 * whole is the field: once it holds data, only the application replaces it.
 */
const IDENTITY_SECTIONS: readonly KycSection[] = ['datosBasicos', 'estructuraCorporativa'];

/**
 * The most a section may hold, as JSON (decision 0074): a company's facts, its partners and ratings fit in a few
 * KB; the cap bounds what one change adds to the history (before and after) and what a read answers.
 */
export const KYC_SECTION_MAX_BYTES = 16 * 1024;

/** A section over KYC_SECTION_MAX_BYTES: the 400 of the body's `data`, before anything is read or written. */
function assertSectionSize(data: Record<string, unknown>): void {
  if (Buffer.byteLength(JSON.stringify(data)) > KYC_SECTION_MAX_BYTES) {
    throw ValidationFailedError.single(
      'data',
      'invalid',
      `data is larger than ${KYC_SECTION_MAX_BYTES} bytes as JSON`,
    );
  }
}

/**
 * Whether a stored section holds data: `{}` holds none, as a section never given (decision 0097). The company may
 * give such a section, and POST /kyc-data may create datosBasicos over it.
 */
function holdsData(section: Record<string, unknown> | null | undefined): boolean {
  return section != null && Object.keys(section).length > 0;
}

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
    assertSectionSize(data);
    return this.dataSource.transaction(async (manager) => {
      companyId = (await this.companies.find(manager, principal, companyId, true)).id;
      const existing = await manager.findOneBy(CompanyKycDataEntity, { companyId });
      if (holdsData(existing?.datosBasicos)) {
        throw ValidationFailedError.single(
          'data',
          'duplicate',
          'datosBasicos already exists: modify it with PATCH',
        );
      }
      return this.writeSection(manager, principal, companyId, existing, 'datosBasicos', data);
    });
  }

  /**
   * UpdateKYCDataRequest: replaces one section. The section as stored is no change (no history entry, recorded
   * `unchanged`); a section that identifies the company, once it holds data, is the application's to change.
   */
  async updateSection(
    principal: Principal,
    companyId: string,
    section: KycSection,
    data: Record<string, unknown>,
  ): Promise<CompanyKycDataDto> {
    assertSectionSize(data);
    return this.dataSource.transaction(async (manager) => {
      companyId = (await this.companies.find(manager, principal, companyId, true)).id;
      const existing = await manager.findOneBy(CompanyKycDataEntity, { companyId });
      const stored = existing?.[section] ?? null;
      if (stored !== null && sameJson(stored, data)) {
        await auditAppend(manager, requestActor(principal), {
          resourceType: 'kyc_data',
          resourceId: companyId,
          outcome: 'unchanged',
        });
        return companyView(companyId, existing);
      }
      if (holdsData(stored)) {
        refuseOwnIdentityChange(
          principal,
          IDENTITY_SECTIONS.filter((identity) => identity === section),
        );
      }
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

/**
 * Whether `sent` is what the section already holds: the same value as PostgreSQL would store it, whatever the
 * order of the keys (through JSON text, as the column is written: -0 is 0).
 */
function sameJson(stored: Record<string, unknown>, sent: Record<string, unknown>): boolean {
  return isDeepStrictEqual(stored, JSON.parse(JSON.stringify(sent)));
}
