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

/**
 * The most a history page holds of `previous` and `current`, as JSON (decision 0074): at least one entry, then
 * as many as fit. A page of 500 entries of large sections reached 92 MB.
 */
export const KYC_HISTORY_PAGE_MAX_BYTES = 1024 * 1024;

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
  const owned = () => {
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
    return query;
  };
  // The page's entries as far as KYC_HISTORY_PAGE_MAX_BYTES, measured in the database: their values never
  // travel, only their sizes (decision 0074).
  const sizes = (await owned()
    .select('h.id', 'id')
    .addSelect('coalesce(octet_length(h.previous::text), 0) + octet_length(h.current::text)', 'bytes')
    .getRawMany()) as { id: string; bytes: number }[];
  let taken = 0;
  for (let bytes = 0; taken < sizes.length; taken++) {
    bytes += Number(sizes[taken].bytes);
    if (taken > 0 && bytes > KYC_HISTORY_PAGE_MAX_BYTES) break;
  }
  // Fewer than asked (limit + 1, the extra one saying there is more) when the bytes ran out: there is more.
  const pageSize = taken < sizes.length ? taken : limit;
  const rows =
    taken === 0
      ? []
      : await owned()
          .take(pageSize + 1)
          .getMany();
  const more = rows.length > pageSize;
  const served = more ? rows.slice(0, pageSize) : rows;
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
