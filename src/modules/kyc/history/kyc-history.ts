import { applyDecorators, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import type { EntityManager } from 'typeorm';
import { AuthClient } from '#common/auth/auth.decorator.js';
import { actorOf, type Principal } from '#common/auth/principal.js';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { Paginated, type Page } from '#common/http/pagination.js';
import type { OwnerType } from '../owners/kyc-owners.port.js';
import { KycHistoryEntryDto } from './kyc-history.dto.js';
import { KycHistoryEntity } from './kyc-history.entity.js';

/**
 * The history of users' and companies' KYC data: every change writes an entry
 * (who, when, the section, the value before and after) in the transaction of
 * the change, and both list it the same way.
 */

/** Writes the entry of one change, inside the change's transaction. */
export async function recordKycChange(
  manager: EntityManager,
  principal: Principal,
  ownerType: OwnerType,
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

/** A page of one owner's entries, oldest first; the cursor is the id of the last entry served. */
export async function kycHistoryPage(
  manager: EntityManager,
  principal: Principal,
  ownerType: OwnerType,
  ownerId: string,
  limit: number,
  cursor?: string,
): Promise<Page<KycHistoryEntryDto>> {
  if (cursor !== undefined && !/^\d{1,18}$/.test(cursor)) {
    throw ValidationFailedError.single('cursor', 'invalid', 'cursor is not valid');
  }
  const query = manager
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

/** `GET <path>`: an owner's KYC history (client credentials), as users and companies both answer it. */
export const KycHistoryRoute = (path: string, owner: 'user' | 'company', operationId: string) =>
  applyDecorators(
    Get(path),
    AuthClient(),
    Paginated(),
    ApiOperation({ summary: `Every change of a ${owner}'s KYC data: who, when, before, after`, operationId }),
    ApiOkResponse({ type: [KycHistoryEntryDto] }),
  );
