import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { isUniqueViolation } from '#common/database/sql.js';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { DEFAULT_PAGE_SIZE, toPage, type Page } from '#common/http/pagination.js';
import { OWNER_ACCOUNTS, type OwnerAccounts } from '#modules/kyc/owners/owner-accounts.port.js';
import {
  claimSubjectId,
  deleteOwner,
  findOwner,
  ownerPageRows,
  type OwnerKind,
} from '#modules/kyc/owners/owner-rows.js';
import { cnpjProblem, cuitProblem, normalizeCnpj, normalizeTaxId } from '#modules/kyc/tax-id.js';
import type { CompanyResponseDto, CreateCompanyDto } from './dto/company.dto.js';
import { CompanyEntity } from './entities/company.entity.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';

const COMPANIES: OwnerKind<CompanyEntity> = {
  entity: CompanyEntity,
  notFound: 'Company not found',
  holdsMoney: 'The company owns an account that holds money',
  inFlight: 'The company owns an account with transfers in flight',
  resource: 'company',
};

/** Companies of an application; a subject principal reaches only the company it is. */
@Injectable()
export class CompaniesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(OWNER_ACCOUNTS) private readonly accounts: OwnerAccounts,
  ) {}

  async create(principal: Principal, input: CreateCompanyDto): Promise<CompanyResponseDto> {
    const id = principal.kind === 'subject' ? principal.subject : randomUUID();
    const taxType = input.taxType.toUpperCase() as 'CUIT' | 'CNPJ';
    const problem =
      taxType === 'CUIT' ? cuitProblem(input.taxValue, ['entity']) : cnpjProblem(input.taxValue);
    if (problem) throw ValidationFailedError.single('taxValue', 'invalid', `${taxType} ${problem}`);
    const taxCondition = ['VAT_REGISTERED', 'vatRegistered'].includes(input.taxCondition)
      ? 'VAT_REGISTERED'
      : 'OTHERS';
    const company = this.dataSource.getRepository(CompanyEntity).create({
      id,
      appId: principal.appId,
      name: input.name.trim(),
      legalName: input.legalName.trim(),
      tradeName: input.tradeName.trim(),
      companyType: input.companyType.trim(),
      taxType,
      taxValue: taxType === 'CNPJ' ? normalizeCnpj(input.taxValue) : normalizeTaxId(input.taxValue),
      taxCondition,
      operationCountry: input.operationCountry,
      legalAddress: { ...input.legalAddress },
    });
    try {
      await this.dataSource.transaction(async (manager) => {
        if (principal.kind === 'subject') {
          await claimSubjectId(manager, id, 'the user or company of this token is already registered');
        }
        await manager.insert(CompanyEntity, company);
        await auditAppend(manager, requestActor(principal), {
          resourceType: 'company',
          resourceId: id,
          outcome: 'created',
        });
      });
    } catch (error) {
      if (isUniqueViolation(error, 'uq_companies_app_tax')) {
        throw ValidationFailedError.single(
          'taxValue',
          'duplicate',
          'a company with this tax id already exists',
        );
      }
      if (isUniqueViolation(error, 'PK_companies')) {
        throw ValidationFailedError.single(
          '',
          'duplicate',
          'the company of this token is already registered',
        );
      }
      throw error;
    }
    return this.view(company);
  }

  async list(
    principal: Principal,
    limit = DEFAULT_PAGE_SIZE,
    cursor?: string,
  ): Promise<Page<CompanyResponseDto>> {
    const rows = await ownerPageRows(this.dataSource, COMPANIES, principal, limit, cursor);
    return toPage(rows, limit, (row) => this.view(row));
  }

  async get(principal: Principal, id: string): Promise<CompanyResponseDto> {
    return this.view(await this.find(this.dataSource.manager, principal, id));
  }

  /** Soft delete; refused while the company owns an account holding money. */
  async remove(principal: Principal, id: string): Promise<void> {
    await deleteOwner(this.dataSource, this.accounts, COMPANIES, principal, id);
  }

  /** The company, locked when asked, or 404 (also for another application's or another owner's). */
  find(manager: EntityManager, principal: Principal, id: string, lock = false): Promise<CompanyEntity> {
    return findOwner(manager, COMPANIES, principal, id, lock);
  }

  view(company: CompanyEntity): CompanyResponseDto {
    return {
      uuid: company.id,
      name: company.name,
      legalName: company.legalName,
      taxInfomation: { type: company.taxType, value: company.taxValue, condition: company.taxCondition },
      legalAddress: company.legalAddress,
    };
  }
}
