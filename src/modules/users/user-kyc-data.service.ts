import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { DEFAULT_PAGE_SIZE, type Page } from '#common/http/pagination.js';
import type { KycHistoryEntryDto } from '#modules/kyc/history/kyc-history.dto.js';
import { kycHistoryPage, recordKycChange } from '#modules/kyc/history/kyc-history.js';
import type { CreateUserKycDataDto, UpdateUserKycDataDto, UserKycDataDto } from './dto/user-kyc-data.dto.js';
import { UserKycDataEntity } from './entities/user-kyc-data.entity.js';
import { UsersService } from './users.service.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';

/** A user's KYC data; every change leaves a history entry (who, when, before, after). */
@Injectable()
export class UserKycDataService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly users: UsersService,
  ) {}

  async create(principal: Principal, userId: string, input: CreateUserKycDataDto): Promise<UserKycDataDto> {
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
      await recordKycChange(manager, principal, 'USER', userId, 'kycData', null, view);
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'kyc_data',
        resourceId: userId,
        outcome: 'created',
      });
      return view;
    });
  }

  /** A read of KYC data: audited (outcome `read`) in a transaction of its own. */
  async get(principal: Principal, userId: string): Promise<UserKycDataDto> {
    return this.dataSource.transaction(async (manager) => {
      userId = (await this.users.find(manager, principal, userId)).id;
      const row = await manager.findOneBy(UserKycDataEntity, { userId });
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'kyc_data',
        resourceId: userId,
        outcome: 'read',
      });
      return row
        ? userView(row)
        : { uuid: null, userId, civilStatus: null, isPep: null, isSOAUIF: null, isBlackListed: null };
    });
  }

  async update(principal: Principal, userId: string, input: UpdateUserKycDataDto): Promise<UserKycDataDto> {
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
      if (unchanged) {
        // nothing changed: no history entry, but the request is on record
        await auditAppend(manager, requestActor(principal), {
          resourceType: 'kyc_data',
          resourceId: userId,
          outcome: 'unchanged',
        });
        return previous;
      }
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
      await recordKycChange(manager, principal, 'USER', userId, 'kycData', previous, current);
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'kyc_data',
        resourceId: userId,
        outcome: 'updated',
      });
      return current;
    });
  }

  async history(
    principal: Principal,
    userId: string,
    limit = DEFAULT_PAGE_SIZE,
    cursor?: string,
  ): Promise<Page<KycHistoryEntryDto>> {
    return this.dataSource.transaction(async (manager) => {
      userId = (await this.users.find(manager, principal, userId)).id;
      const page = await kycHistoryPage(manager, principal, 'USER', userId, limit, cursor);
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'kyc_history',
        resourceId: userId,
        outcome: 'read',
      });
      return page;
    });
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
