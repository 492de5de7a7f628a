import { Inject, Injectable } from '@nestjs/common';
import type pg from 'pg';
import type { EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { PG_POOL } from '#common/database/pg-pool.js';
import type { ReadDatabase } from '#common/database/read-database.js';
import { closedSetLiteral, listFetchSize, statementName } from '#common/database/sql.js';
import type { CursorPosition } from '#common/http/pagination.js';
import { derivedUuid } from '#common/ids/derived-uuid.js';
import { personTypeOf } from '#modules/kyc/tax-id.js';
import { toJson } from '#modules/wallet/money.js';
import { FAILURE_STATUSES } from './transfer-status.js';
import type { ReversalInfoDto } from './dto/reversal.dto.js';
import type { CreateTransactionResponseDto, TransactionInfoDto } from './dto/transfer.dto.js';
import type { TransferViewRow } from './transfer-function.contract.js';
import { TRANSFER_STATUSES } from './transfer-status.js';

const MOVEMENT_TYPES = ['DEPOSIT', 'WITHDRAW'] as const;

/**
 * The owner of a row's counterparty account (`cw`) and, for a user, its record (`cu`): what shows an internal
 * counterparty as its owner is recorded (decision 0086). Every read of a row and a reversal's own answer (decision
 * 0088) join them so.
 */
export function counterpartyOwnerJoins(accountId: string): string {
  return `LEFT JOIN wallet_accounts cw ON cw.id = ${accountId}
    LEFT JOIN users cu ON cw.owner_type = 'USER' AND cu.id = cw.owner_id`;
}

const COLUMNS = `t.id, t.clearing_id, t.movement_type, t.status, t.route, t.counterparty_name, t.counterparty_tax_id,
         t.counterparty_identifier_type, t.counterparty_identifier, t.counterparty_account_id,
         t.amount::text AS amount, t.currency, t.fees::text AS fees, t.taxes::text AS taxes, t.concept, t.summary,
         t.description, t.created_at, w.owner_type, w.owner_id, w.cvu,
         coalesce(u.first_name || ' ' || u.last_name, c.legal_name) AS owner_name,
         coalesce(u.tax_id, c.tax_value) AS owner_tax_id,
         coalesce(u.tax_id_type, 'cuit') AS owner_tax_id_type,
         cw.owner_id AS counterparty_owner_id, cw.owner_type AS counterparty_owner_type,
         cu.tax_id_type AS counterparty_owner_tax_id_type, t.reversal_of`;
const FROM = `
    FROM transfers t
    JOIN wallet_accounts w ON w.id = t.account_id
    ${counterpartyOwnerJoins('t.counterparty_account_id')}
    LEFT JOIN users u ON w.owner_type = 'USER' AND u.id = w.owner_id
    LEFT JOIN companies c ON w.owner_type = 'COMPANY' AND c.id = w.owner_id`;
const SELECT = `SELECT ${COLUMNS} ${FROM}`;
/** TransferViews.find's statements: one transfer of an application, and of one of a subject's accounts. */
const FIND = `${SELECT} WHERE t.id = $1 AND t.app_id = $2`;
const FIND_OWN = `${FIND} AND w.owner_id = $3`;
/**
 * Rows by id alone, whatever their scope, with the keys the money functions answer (reversal_of included): what a
 * call whose answer was lost wrote under the ids the API made for it (TransferWriter, decision 0066).
 */
export const ROWS_BY_ID = `${SELECT} WHERE t.id = ANY ($1::uuid[])`;

/** A transfer row with its reversal_of (null unless it is a reversal or a return). */
export type RowWithReversal = TransferViewRow & { reversal_of: string | null };

/** A stable uuid for an external counterparty (derived from its account number). */
function partyUuid(identifier: string): string {
  return derivedUuid(`counterparty:${identifier}`);
}

/** TransactionInfo and CreateTransactionResponse built from one query (no entity hydration). */
@Injectable()
export class TransferViews {
  constructor(@Inject(PG_POOL) private readonly pool: pg.Pool) {}

  /**
   * One transfer in the principal's scope (its application; a subject, its own accounts), from the primary: a
   * client polls it right after creating it. A named statement on the pg pool under the DataSource, planned once
   * per connection (TypeORM's query API plans every call; a status poll is frequent).
   */
  async find(principal: Principal, id: string): Promise<TransactionInfoDto | undefined> {
    const { rows } = await this.pool.query<TransferViewRow>(
      principal.kind === 'subject'
        ? {
            name: 'wallet_transfer_view_own',
            text: FIND_OWN,
            values: [id, principal.appId, principal.subject],
          }
        : { name: 'wallet_transfer_view', text: FIND, values: [id, principal.appId] },
    );
    return rows[0] ? info(rows[0]) : undefined;
  }

  /**
   * The row `id` in the principal's scope (its application; a subject, its own accounts) and the rows that
   * reverse it (reversal_of = id: they are on the same account), oldest first. Undefined when out of scope.
   */
  async withReversals(
    manager: EntityManager,
    principal: Principal,
    id: string,
  ): Promise<{ original: RowWithReversal; reversals: RowWithReversal[] } | undefined> {
    const params: unknown[] = [id, principal.appId];
    let scope = 't.app_id = $2';
    if (principal.kind === 'subject') {
      params.push(principal.subject);
      scope += ' AND w.owner_id = $3';
    }
    const [original] = (await manager.query(
      `${SELECT} WHERE t.id = $1 AND ${scope}`,
      params,
    )) as RowWithReversal[];
    if (!original) return undefined;
    const reversals = (await manager.query(`${SELECT} WHERE t.reversal_of = $1 ORDER BY t.created_at, t.id`, [
      id,
    ])) as RowWithReversal[];
    return { original, reversals };
  }

  /**
   * Newest first; filters on status, movementType and a creation date range; keyset on (created_at, id). A
   * lag-tolerant list: it reads through ReadDatabase (the replica when DATABASE_READ_URL is set, decision 0033),
   * as a named statement (listStatement).
   */
  async list(
    reads: ReadDatabase,
    principal: Principal,
    filter: TransferListFilter,
    limit: number,
    before?: CursorPosition,
  ): Promise<{ view: TransactionInfoDto; createdAt: Date }[]> {
    const { name, text, values } = listStatement(principal, filter, limit, before);
    const rows = await reads.query<TransferViewRow>(text, values, name);
    return rows.slice(0, limit).map((row) => ({ view: info(row), createdAt: row.created_at as Date }));
  }
}

/** What GET /v1/wallet/transactions (and an account's list) filter on. */
export interface TransferListFilter {
  status?: string;
  movementType?: string;
  from?: string;
  to?: string;
  accountId?: string;
}

/**
 * TransferViews.list's statement: a named one, planned once per connection and shape (its join, then of five tables,
 * cost 0.5-0.9 ms of planning on every call, more than running it; decision 0048; six since 0086). The status and movement type are
 * literals, checked against their closed sets, so the plan knows the value (a rare status reads the partial
 * index of transfers in flight instead of the application's whole history); the LIMIT is a literal from a few
 * fixed sizes (listFetchSize), at least `limit`. Everything else (application, subject, account, dates, the
 * cursor) is a parameter.
 */
export function listStatement(
  principal: Principal,
  filter: TransferListFilter,
  limit: number,
  before?: CursorPosition,
): { name: string; text: string; values: unknown[] } {
  const where = ['t.app_id = $1'];
  const values: unknown[] = [principal.appId];
  const add = (sql: string, value: unknown) => {
    values.push(value);
    where.push(sql.replace('?', `$${values.length}`));
  };
  if (principal.kind === 'subject') add('w.owner_id = ?', principal.subject);
  if (filter.accountId) add('t.account_id = ?', filter.accountId);
  if (filter.status) where.push(`t.status = ${closedSetLiteral(filter.status, TRANSFER_STATUSES)}`);
  if (filter.movementType)
    where.push(`t.movement_type = ${closedSetLiteral(filter.movementType, MOVEMENT_TYPES)}`);
  if (filter.from) add('t.created_at >= ?', new Date(filter.from));
  if (filter.to) add('t.created_at < ?', new Date(filter.to));
  if (before) {
    values.push(before.createdAt, before.id);
    where.push(`(t.created_at, t.id) < ($${values.length - 1}, $${values.length})`);
  }
  const text =
    `${SELECT} WHERE ${where.join(' AND ')} ORDER BY t.created_at DESC, t.id DESC ` +
    `LIMIT ${listFetchSize(limit)}`;
  return { name: statementName('wallet_transfer_list', text), text, values };
}

/**
 * CreateTransactionResponse: TransactionInfo with the amount as an object, `created` and `movementType`. Built
 * directly, in the order the answer has always had (TransactionInfo's keys without `amount` and `createdAt`,
 * then `amount`, `movementType`, `created`), rather than by copying TransactionInfo without two keys: the
 * object rest and spread cost twice the rest of the view, and spreading shared parts into both views costs three
 * times a literal, so the two literals repeat their first fields.
 */
export function createdView(row: TransferViewRow): CreateTransactionResponseDto {
  return {
    uuid: row.id,
    clearingId: row.clearing_id,
    type: row.movement_type,
    status: row.status,
    account: accountParty(row),
    counterParty: counterParty(row),
    currency: row.currency,
    concept: row.concept,
    summary: row.summary,
    description: row.description,
    taxes: applied(row, row.taxes),
    fees: applied(row, row.fees),
    amount: { value: toJson(row.amount), currency: row.currency },
    movementType: row.movement_type,
    created: new Date(row.created_at).toISOString(),
  } as CreateTransactionResponseDto;
}

/** A reversal (or a return from the rail): TransactionInfo with the original row of the same account. */
export function reversalView(row: TransferViewRow & { reversal_of: string | null }): ReversalInfoDto {
  return { ...info(row), reversalOf: row.reversal_of ?? '' };
}

function info(row: TransferViewRow): TransactionInfoDto {
  return {
    uuid: row.id,
    clearingId: row.clearing_id,
    type: row.movement_type,
    status: row.status,
    account: accountParty(row),
    counterParty: counterParty(row),
    amount: toJson(row.amount),
    currency: row.currency,
    concept: row.concept,
    summary: row.summary,
    description: row.description,
    taxes: applied(row, row.taxes),
    fees: applied(row, row.fees),
    createdAt: new Date(row.created_at).toISOString(),
  } as TransactionInfoDto;
}

/**
 * A transfer's taxes or fees as TransactionInfo states them, "totals applied" (interface): what was charged, or
 * is held to be charged while in flight. A failed external transfer gave them back with its amount (the release),
 * so it shows 0 (decision 0013, amendment of 2026-12-02). The row keeps what was asked.
 */
function applied(row: TransferViewRow, total: string): number {
  return (FAILURE_STATUSES as readonly string[]).includes(row.status) ? 0 : toJson(total);
}

/** The key of an owner's tax id: a user's as it registered it (cuil or cuit), a company's always cuit. */
function taxIdKey(ownerType: 'USER' | 'COMPANY', taxIdType: string | null | undefined): 'cuit' | 'cuil' {
  return ownerType === 'USER' && taxIdType === 'cuil' ? 'cuil' : 'cuit';
}

function accountParty(row: TransferViewRow): TransactionInfoDto['account'] {
  return {
    uuid: row.owner_id,
    name: row.owner_name ?? '',
    [taxIdKey(row.owner_type, row.owner_tax_id_type)]: row.owner_tax_id ?? '',
    type: row.owner_type,
    cvu: row.cvu,
  } as TransactionInfoDto['account'];
}

/**
 * Whether the row's counterparty name and tax id were copied from the other owner's record, not typed by a client
 * (decision 0086): an internal transfer's DEPOSIT (the sender's owner), and the WITHDRAW of its reversal, which
 * copies that DEPOSIT's. An internal transfer's WITHDRAW and its reversal's DEPOSIT show what the client typed.
 */
function registeredCounterparty(row: TransferViewRow): boolean {
  return row.route === 'INTERNAL' && (row.movement_type === 'DEPOSIT') === (row.reversal_of == null);
}

/**
 * The counterparty's personType and the key of its tax id: from the owner's record when the row shows that owner's
 * own name and tax id (a company is Juridica, a user Fisica; the key as in accountParty), else guessed from the
 * tax id's prefix (30/33/34 a company's CUIT, else a person's CUIL): all a typed id says.
 */
function counterParty(row: TransferViewRow): TransactionInfoDto['counterParty'] {
  let personType: 'Fisica' | 'Juridica';
  let taxKey: 'cuit' | 'cuil';
  const owner = registeredCounterparty(row) ? row.counterparty_owner_type : undefined;
  if (owner) {
    personType = owner === 'COMPANY' ? 'Juridica' : 'Fisica';
    taxKey = taxIdKey(owner, row.counterparty_owner_tax_id_type);
  } else {
    personType = personTypeOf(row.counterparty_tax_id);
    taxKey = personType === 'Juridica' ? 'cuit' : 'cuil';
  }
  return {
    // Like account.uuid, the party's own uuid: the owner of an internal counterparty's account.
    uuid: row.counterparty_owner_id ?? partyUuid(row.counterparty_identifier),
    name: row.counterparty_name,
    [taxKey]: row.counterparty_tax_id,
    type: row.route,
    personType,
    identifierType: row.counterparty_identifier_type,
    identifier: row.counterparty_identifier,
  } as TransactionInfoDto['counterParty'];
}
