import { Injectable } from '@nestjs/common';
import { ReadDatabase } from '#common/database/read-database.js';
import { listFetchSize, statementName } from '#common/database/sql.js';
import type { Principal } from '#common/auth/principal.js';
import { NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { instantMicros, parseInstant } from '#common/http/instant.js';
import { DEFAULT_PAGE_SIZE } from '#common/http/pagination.js';
import { fromDb, type Money, toJson } from '../money.js';
import type { BalanceResponseDto } from './dto/account.dto.js';
import type { StatementMovementDto, StatementResponseDto } from './dto/statement.dto.js';
import {
  decodeStatementCursor,
  encodeStatementCursor,
  type StatementPosition,
  statementWindow,
} from './statement-cursor.js';

/** `from` when absent: before any posting, so the statement is the whole history. */
export const HISTORY_START = '1970-01-01T00:00:00Z';

/** The account the principal reaches (its application; a subject only its own), not deleted. */
const SCOPE = `SELECT w.id FROM wallet_accounts w
                WHERE w.id = $1 AND w.app_id = $2 AND w.status <> 'DELETED'
                  AND ($3::text IS NULL OR w.owner_id::text = $3)`;

/**
 * The balance at a point of the account's postings (`point`, compared with `key`; `at` its time), inside a query
 * where `a` is its ledger account, summed from the nearer end (decision 0075): the postings up to the point when it
 * lies nearer the account's first posting than its last, else the cached balance minus the postings after it. Both
 * are exact (the cached balance is the sum of the postings, in the same snapshot); only the branch taken runs, so
 * a statement from the start of the history no longer sums the whole history to find an opening of zero. The two
 * ends are one index probe each (idx_postings_account_time).
 */
const balanceNearer = (point: string, key: string, at: string) =>
  `CASE WHEN ${at} - (SELECT min(p.created_at) FROM postings p WHERE p.account_id = a.id)
             < (SELECT max(p.created_at) FROM postings p WHERE p.account_id = a.id) - ${at}
        THEN 0::numeric(24,6) + COALESCE((SELECT sum(p.amount) FROM postings p
                                           WHERE p.account_id = a.id AND ${key} <= ${point}), 0)
        ELSE a.balance - COALESCE((SELECT sum(p.amount) FROM postings p
                                    WHERE p.account_id = a.id AND ${key} > ${point}), 0) END`;

interface MovementRow {
  posting_id: string;
  posted_at: string;
  amount: string;
  running: string;
  entry_id: string;
  kind: string;
  reference: string | null;
  description: string | null;
}

/** A movement with its amounts exact (the CSV's source). */
export type ExactMovement = Omit<MovementRow, 'amount' | 'running'> & { amount: Money; running: Money };

/** A statement page with exact amounts: the JSON body rounds them to numbers at the edge, the CSV does not. */
export interface ExactStatement {
  from: string;
  to: string;
  opening: Money;
  closing: Money;
  totalIn: Money;
  totalOut: Money;
  movements: ExactMovement[];
}

export interface StatementPage {
  body: StatementResponseDto;
  exact: ExactStatement;
  nextCursor: string | null;
}

interface StatementHead {
  reversed: boolean;
  currency: string;
  from_text: string;
  to_text: string;
  opening: string;
  closing: string;
  total_in: string;
  total_out: string;
  movements: MovementRow[];
}

const UTC_TEXT = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * GET …/balance?at=: one named statement (planned once per connection), the balance summed from the nearer end of
 * the account's postings as a statement's opening is (decision 0075). Its values: the account id, the application,
 * the owner (ownerOf) and the instant.
 */
export const BALANCE_AT = `SELECT (${balanceNearer('$4::timestamptz', 'p.created_at', '$4::timestamptz')})::text AS balance
                      FROM (${SCOPE}) w JOIN ledger_accounts a ON a.id = w.id`;

/**
 * StatementService.statement's query: the head (currency, the window's bounds as text, opening and closing
 * balances, totals) and a page of movements with their running balance, in one statement (one snapshot). A named
 * statement, one text with a cursor and one without (a generic plan cannot take `$n IS NULL OR …` as an index
 * bound), its LIMIT a fixed size at least `rows` (listFetchSize; decision 0048): the page may hold more rows than
 * asked for, the first ones are the same.
 */
export function statementQuery(
  accountId: string,
  principal: Principal,
  from: string,
  to: string,
  rows: number,
  position?: StatementPosition,
): { name: string; text: string; values: unknown[] } {
  const values: unknown[] = [accountId, principal.appId, ownerOf(principal), from, to];
  if (position) values.push(position.at, position.id);
  const after = position ? 'AND (p.created_at, p.id) > ($6::timestamptz, $7::bigint)' : '';
  // Where the page starts: the balance at `from` (page 1), or, after a cursor, the balance after the cursor's
  // posting (right only for a position inside (from, to]: statementWindow refuses any other), read from the
  // nearer end of the account's postings (decision 0075).
  const start = position
    ? balanceNearer('($6::timestamptz, $7::bigint)', '(p.created_at, p.id)', '$6::timestamptz')
    : '(SELECT balance FROM opening)';
  const text = `WITH acc AS (SELECT a.* FROM (${SCOPE}) w JOIN ledger_accounts a ON a.id = w.id),
            page AS (
              SELECT p.id, p.created_at, p.amount, p.entry_id
                FROM acc a JOIN postings p ON p.account_id = a.id
               WHERE p.created_at > $4::timestamptz AND p.created_at <= $5::timestamptz ${after}
               ORDER BY p.created_at, p.id
               LIMIT ${listFetchSize(rows)}),
            opening AS (SELECT ${balanceNearer('$4::timestamptz', 'p.created_at', '$4::timestamptz')} AS balance FROM acc a),
            start AS (SELECT ${start} AS balance FROM acc a)
       SELECT ($4::timestamptz > $5::timestamptz) AS reversed,
              a.currency, ${UTC_TEXT('$4::timestamptz')} AS from_text, ${UTC_TEXT('$5::timestamptz')} AS to_text,
              (SELECT balance FROM opening)::text AS opening,
              ((SELECT balance FROM opening) + totals.total_in - totals.total_out)::text AS closing,
              totals.total_in::text AS total_in, totals.total_out::text AS total_out,
              COALESCE((SELECT json_agg(m ORDER BY m.n) FROM (
                 SELECT row_number() OVER (ORDER BY pg.created_at, pg.id) AS n,
                        pg.id::text AS posting_id, ${UTC_TEXT('pg.created_at')} AS posted_at,
                        pg.amount::text AS amount,
                        ((SELECT balance FROM start) + sum(pg.amount) OVER (ORDER BY pg.created_at, pg.id))::text AS running,
                        e.id AS entry_id, e.kind, e.reference, e.description
                   FROM page pg JOIN journal_entries e ON e.id = pg.entry_id) m), '[]') AS movements
         FROM acc a,
              LATERAL (SELECT COALESCE(sum(p.amount) FILTER (WHERE p.amount > 0), 0) AS total_in,
                              COALESCE(-sum(p.amount) FILTER (WHERE p.amount < 0), 0) AS total_out
                         FROM postings p
                        WHERE p.account_id = a.id
                          AND p.created_at > $4::timestamptz AND p.created_at <= $5::timestamptz) totals`;
  return { name: statementName('wallet_statement', text), text, values };
}

/**
 * Balances as of an instant and account statements, read from the postings (docs/decisions/0030). Each answer is
 * one SQL statement, so its numbers come from one snapshot. A time before the account existed gives zero; a time
 * in the future gives the postings known so far (today's balance).
 */
@Injectable()
export class StatementService {
  /** Both answers tolerate a replica's lag (decision 0033): they read the replica when there is one. */
  constructor(private readonly reads: ReadDatabase) {}

  async balanceAt(principal: Principal, id: string, at: string | undefined): Promise<BalanceResponseDto> {
    const instant = parseInstant(at, 'at');
    const accountId = id.toLowerCase();
    const rows = await this.reads.query<{ balance: string }>(
      BALANCE_AT,
      [accountId, principal.appId, ownerOf(principal), instant],
      'wallet_balance_at',
    );
    if (rows.length === 0) throw new NotFoundError(id, 'Account not found');
    return { id: accountId, accountId, balance: toJson(rows[0].balance) };
  }

  async statement(
    principal: Principal,
    id: string,
    query: { from?: string; to?: string; limit?: number; cursor?: string },
  ): Promise<StatementPage> {
    const given = {
      from: query.from === undefined ? undefined : parseInstant(query.from, 'from'),
      to: query.to === undefined ? undefined : parseInstant(query.to, 'to'),
    };
    const cursor = query.cursor === undefined ? undefined : decodeStatementCursor(query.cursor);
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const accountId = id.toLowerCase();
    // 'now': the statement's own time; the next pages get it back from the cursor (decision 0063).
    const { from, to, position } = statementWindow(
      accountId,
      given,
      { from: HISTORY_START, to: 'now' },
      cursor,
    );
    const { name, text, values } = statementQuery(accountId, principal, from, to, limit + 1, position);
    const [head] = await this.reads.query<StatementHead>(text, values, name);
    if (!head) throw new NotFoundError(id, 'Account not found');
    if (head.reversed) throw ValidationFailedError.single('to', 'invalid', 'to must not be before from');
    const more = head.movements.length > limit;
    // (The page may hold more rows than limit + 1: statementQuery's LIMIT is a fixed size.)
    const served = more ? head.movements.slice(0, limit) : head.movements;
    const last = served[served.length - 1];
    const exact: ExactStatement = {
      from: head.from_text,
      to: head.to_text,
      opening: fromDb(head.opening),
      closing: fromDb(head.closing),
      totalIn: fromDb(head.total_in),
      totalOut: fromDb(head.total_out),
      movements: served.map((row) => ({ ...row, amount: fromDb(row.amount), running: fromDb(row.running) })),
    };
    return {
      body: {
        accountId,
        currency: head.currency,
        from: exact.from,
        to: exact.to,
        openingBalance: toJson(exact.opening),
        closingBalance: toJson(exact.closing),
        totalIn: toJson(exact.totalIn),
        totalOut: toJson(exact.totalOut),
        movements: exact.movements.map(movementView),
      },
      exact,
      // The period goes in the cursor as this page had it, so the next pages are of the same statement.
      nextCursor:
        more && last
          ? encodeStatementCursor({
              accountId,
              from: cursor?.from ?? instantMicros(from),
              to: cursor?.to ?? instantMicros(given.to ?? exact.to),
              at: instantMicros(last.posted_at),
              id: last.posting_id,
            })
          : null,
    };
  }
}

const ownerOf = (principal: Principal): string | null =>
  principal.kind === 'subject' ? principal.subject : null;

function movementView(row: ExactMovement): StatementMovementDto {
  return {
    postingId: row.posting_id,
    postedAt: row.posted_at,
    amount: toJson(row.amount),
    balance: toJson(row.running),
    entryId: row.entry_id,
    kind: row.kind,
    reference: row.reference,
    description: row.description,
  };
}
