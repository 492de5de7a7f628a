import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager, type FindOptionsWhere } from 'typeorm';
import type { Principal } from '../../../common/auth/principal.js';
import { tenantWhere, tenantWhereAnd } from '../../../common/auth/tenancy.js';
import { isUniqueViolation, keysetAfter } from '../../../common/database/sql.js';
import {
  ForbiddenError,
  NotFoundError,
  ValidationFailedError,
} from '../../../common/errors/domain-errors.js';
import { decodeCursor, DEFAULT_PAGE_SIZE, toPage, type Page } from '../../../common/http/pagination.js';
import { NO_ACCOUNTS, OWNER_ACCOUNTS, type OwnerAccounts } from '../owner-accounts.port.js';
import { cnpjProblem, cuitProblem, normalizeTaxId } from '../tax-id.js';
import type { CompanyResponseDto, CreateCompanyDto } from './dto/company.dto.js';
import { CompanyEntity } from './entities/company.entity.js';

/** Companies of an application; a subject principal reaches only the company it is. */
@Injectable()
export class CompaniesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Optional() @Inject(OWNER_ACCOUNTS) private readonly accounts: OwnerAccounts = NO_ACCOUNTS,
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
      taxValue: normalizeTaxId(input.taxValue),
      taxCondition,
      operationCountry: input.operationCountry,
      legalAddress: { ...input.legalAddress },
    });
    try {
      await this.dataSource.transaction(async (manager) => {
        if (
          principal.kind === 'subject' &&
          (await manager.exists(CompanyEntity, { where: { id }, withDeleted: true }))
        ) {
          throw ValidationFailedError.single(
            '',
            'duplicate',
            'the company of this token is already registered',
          );
        }
        await manager.insert(CompanyEntity, company);
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
    const after = decodeCursor(cursor);
    const query = this.dataSource
      .getRepository(CompanyEntity)
      .createQueryBuilder('c')
      .where(tenantWhere<CompanyEntity>(principal, ['id']))
      .orderBy('c.created_at', 'ASC')
      .addOrderBy('c.id', 'ASC')
      .take(limit + 1);
    if (after) keysetAfter(query, 'c', after);
    return toPage(await query.getMany(), limit, (row) => this.view(row));
  }

  async get(principal: Principal, id: string): Promise<CompanyResponseDto> {
    return this.view(await this.find(this.dataSource.manager, principal, id));
  }

  /** Soft delete; refused while the company owns an account holding money. */
  async remove(principal: Principal, id: string): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      const company = await this.find(manager, principal, id, true);
      if (
        (await this.accounts.closeForOwnerDeletion(manager, principal.appId, company.id)) === 'holds-money'
      ) {
        throw new ForbiddenError('INVALID_STATE', 'The company owns an account that holds money');
      }
      await manager.softDelete(CompanyEntity, { id: company.id });
    });
  }

  /** The company, locked when asked, or 404 (also for another application's or another owner's). */
  async find(manager: EntityManager, principal: Principal, id: string, lock = false): Promise<CompanyEntity> {
    const where = tenantWhereAnd<CompanyEntity>(principal, ['id'], { id: id.toLowerCase() });
    if (!where) throw new NotFoundError(id, 'Company not found');
    const company = await manager.findOne(CompanyEntity, {
      where: where as FindOptionsWhere<CompanyEntity>[],
      ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
    });
    if (!company) throw new NotFoundError(id, 'Company not found');
    return company;
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
