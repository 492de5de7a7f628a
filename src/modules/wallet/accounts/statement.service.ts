import { Injectable } from '@nestjs/common';
import { ReadDatabase } from '#common/database/read-database.js';
import { listFetchSize, statementName } from '#common/database/sql.js';
import type { Principal } from '#common/auth/principal.js';
import { NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { instantMicros, parseInstant } from '#common/http/instant.js';
import { DEFAULT_PAGE_SIZE } from '#common/http/pagination.js';
import { fromDb, type Money, toDb, toJson } from '../money.js';
import type { BalanceResponseDto } from './dto/account.dto.js';
import type { StatementMovementDto, StatementResponseDto } from './dto/statement.dto.js';
import { SigningKeysService } from '#modules/auth/signing-keys.service.js';
import {
  closingOf,
  decodeStatementCursor,
  encodeStatementCursor,
  type StatementCursor,
  statementCursorKeys,
  type StatementWindow,
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

/** The account as the request named it (for a 404) and as the queries take it (lower case). */
interface Account {
  id: string;
  accountId: string;
}

/** What either page query answers; only page 1's has the period's figures. */
interface StatementHead {
  reversed: boolean;
  currency: string;
  from_text: string;
  to_text: string;
  movements: MovementRow[];
}

interface LaterPageHead extends StatementHead {
  complete: boolean;
}

interface FirstPageHead extends StatementHead {
  opening: string;
  closing: string;
  total_in: string;
  total_out: string;
  last_at: string | null;
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
 * A movement's `reference`: the transaction of the statement's own account ($1) that the posting belongs to
 * (decision 0084). An internal transfer's entry and a reversal's are named by the WITHDRAW of the account they
 * debit, the same entry for both sides: the debit line keeps that reference, its own; the credit line names the
 * row of its own account instead, the DEPOSIT linked to that WITHDRAW (two lookups by primary key, for those
 * lines only). Every other entry already names the account's own row (or no transfer) and keeps its reference.
 * A reference that is not a uuid (none is written so, but no constraint stops a repaired entry) keeps its own
 * instead of failing the page on the cast (found in review).
 */
const OWN_REFERENCE = `CASE WHEN e.kind IN ('INTERNAL_TRANSFER', 'TRANSFER_REVERSAL') AND pg.amount > 0
                             AND pg_input_is_valid(e.reference, 'uuid')
                        THEN COALESCE((SELECT d.id::text
                                         FROM transfers w JOIN transfers d ON d.id = w.linked_transfer_id
                                        WHERE w.id = e.reference::uuid
                                          AND d.account_id = $1::uuid AND d.movement_type = 'DEPOSIT'), e.reference)
                        ELSE e.reference END`;

/** A page's movements with their running balance from `start` (an SQL expression), as JSON, oldest first. */
const MOVEMENTS = (start: string) => `COALESCE((SELECT json_agg(m ORDER BY m.n) FROM (
                 SELECT row_number() OVER (ORDER BY pg.created_at, pg.id) AS n,
                        pg.id::text AS posting_id, ${UTC_TEXT('pg.created_at')} AS posted_at,
                        pg.amount::text AS amount,
                        (${start} + sum(pg.amount) OVER (ORDER BY pg.created_at, pg.id))::text AS running,
                        e.id AS entry_id, e.kind, ${OWN_REFERENCE} AS reference, e.description
                   FROM page pg JOIN journal_entries e ON e.id = pg.entry_id) m), '[]') AS movements`;

/** The account the principal reaches, with its ledger row. */
const ACCOUNT = `acc AS (SELECT a.* FROM (${SCOPE}) w JOIN ledger_accounts a ON a.id = w.id)`;

/**
 * A page's rows, on page 1 and later pages alike: the account's postings after `after` (an SQL condition) up to
 * `upTo`, oldest first. They are taken by the account's id ($1), not through the scope's join, so the index
 * idx_postings_account_time (account_id, created_at, id, amount) gives them in order and the scan stops after the
 * page, with no sort. Through the join the planner does not know the account: it read every posting of the period
 * and sorted them (decision 0077 and its amendment). The rows reach the answer only through `acc`: for an account
 * the principal does not reach there is no row, and the page is not read.
 */
const PAGE = (after: string, upTo: string, rows: number) => `page AS (
              SELECT p.id, p.created_at, p.amount, p.entry_id
                FROM postings p
               WHERE p.account_id = $1::uuid AND ${after} AND p.created_at <= ${upTo}
               ORDER BY p.created_at, p.id
               LIMIT ${listFetchSize(rows)})`;

/**
 * Page 1's query (StatementService.statement): the head (currency, the window's bounds as text, opening and
 * closing balances, totals, and the time of the period's last posting, which the cursor keeps) and a page of
 * movements with their running balance, in one statement (one snapshot). The totals sum the period; the page reads
 * only its rows (PAGE). A named statement, its LIMIT a fixed size at least `rows` (listFetchSize; decision 0048):
 * the page may hold more rows than asked for, the first ones are the same.
 */
export function statementQuery(
  accountId: string,
  principal: Principal,
  from: string,
  to: string,
  rows: number,
): { name: string; text: string; values: unknown[] } {
  const values: unknown[] = [accountId, principal.appId, ownerOf(principal), from, to];
  // The opening is read from the nearer end of the account's postings (decision 0075).
  const text = `WITH ${ACCOUNT},
            ${PAGE('p.created_at > $4::timestamptz', '$5::timestamptz', rows)},
            opening AS (SELECT ${balanceNearer('$4::timestamptz', 'p.created_at', '$4::timestamptz')} AS balance FROM acc a)
       SELECT ($4::timestamptz > $5::timestamptz) AS reversed,
              a.currency, ${UTC_TEXT('$4::timestamptz')} AS from_text, ${UTC_TEXT('$5::timestamptz')} AS to_text,
              (SELECT balance FROM opening)::text AS opening,
              ((SELECT balance FROM opening) + totals.total_in - totals.total_out)::text AS closing,
              totals.total_in::text AS total_in, totals.total_out::text AS total_out,
              ${UTC_TEXT('totals.last_at')} AS last_at,
              ${MOVEMENTS('(SELECT balance FROM opening)')}
         FROM acc a,
              LATERAL (SELECT COALESCE(sum(p.amount) FILTER (WHERE p.amount > 0), 0) AS total_in,
                              COALESCE(-sum(p.amount) FILTER (WHERE p.amount < 0), 0) AS total_out,
                              max(p.created_at) AS last_at
                         FROM postings p
                        WHERE p.account_id = a.id
                          AND p.created_at > $4::timestamptz AND p.created_at <= $5::timestamptz) totals`;
  return { name: statementName('wallet_statement', text), text, values };
}

/**
 * A later page's query (decision 0077): the page's rows after the cursor's position, up to the period's last
 * posting as page 1 read it, with their running balance from the cursor's (`start`, exact decimal text). The
 * opening, closing and totals are the cursor's: nothing of the period outside the page is read (PAGE). `complete`:
 * whether this database holds that last posting (one index probe). An account's postings commit in `created_at`
 * order and a replica replays commits in order, so a database that holds it holds every posting of the page; one
 * that does not is a replica behind page 1's read (decision 0077, amended 2026-12-02).
 */
export function statementPageQuery(
  accountId: string,
  principal: Principal,
  window: Required<StatementWindow>,
  rows: number,
  start: Money,
): { name: string; text: string; values: unknown[] } {
  const { from, to, upTo, position } = window;
  const values: unknown[] = [accountId, principal.appId, ownerOf(principal), from, to, upTo];
  values.push(position.at, position.id, toDb(start));
  const text = `WITH ${ACCOUNT},
            ${PAGE('(p.created_at, p.id) > ($7::timestamptz, $8::bigint)', '$6::timestamptz', rows)}
       SELECT false AS reversed,
              a.currency, ${UTC_TEXT('$4::timestamptz')} AS from_text, ${UTC_TEXT('$5::timestamptz')} AS to_text,
              EXISTS (SELECT 1 FROM postings p
                       WHERE p.account_id = $1::uuid AND p.created_at = $6::timestamptz) AS complete,
              ${MOVEMENTS('$9::numeric')}
         FROM acc a`;
  return { name: statementName('wallet_statement_page', text), text, values };
}

/**
 * Balances as of an instant and account statements, read from the postings (docs/decisions/0030). Each answer is
 * one SQL statement, so its numbers come from one snapshot. A time before the account existed gives zero; a time
 * in the future gives the postings known so far (today's balance).
 */
@Injectable()
export class StatementService {
  /** Both answers tolerate a replica's lag (decision 0033): they read the replica when there is one. */
  constructor(
    private readonly reads: ReadDatabase,
    private readonly signingKeys: SigningKeysService,
  ) {}

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
    const cursor = query.cursor === undefined ? undefined : await this.openCursor(query.cursor);
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const accountId = id.toLowerCase();
    // 'now': the statement's own time; the next pages get it back from the cursor (decision 0063).
    const window = statementWindow(accountId, given, { from: HISTORY_START, to: 'now' }, cursor);
    const account = { id, accountId };
    const { head, figures, upTo } = cursor
      ? await this.laterPage(principal, account, window, cursor, limit + 1)
      : await this.firstPage(principal, account, window, limit + 1);
    const more = head.movements.length > limit;
    // (The page may hold more rows than limit + 1: the queries' LIMIT is a fixed size.)
    const served = more ? head.movements.slice(0, limit) : head.movements;
    const exact: ExactStatement = {
      from: head.from_text,
      to: head.to_text,
      ...figures,
      movements: served.map((row) => ({ ...row, amount: fromDb(row.amount), running: fromDb(row.running) })),
    };
    const last = exact.movements[exact.movements.length - 1];
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
      // The period and page 1's figures go in the cursor, so the next pages are of the same statement and read
      // only their own rows (decision 0077).
      nextCursor:
        more && last
          ? encodeStatementCursor(
              {
                accountId,
                from: cursor?.from ?? instantMicros(window.from),
                to: cursor?.to ?? instantMicros(given.to ?? exact.to),
                upTo,
                at: instantMicros(last.posted_at),
                id: last.posting_id,
                opening: exact.opening,
                totalIn: exact.totalIn,
                totalOut: exact.totalOut,
                running: last.running,
              },
              (await statementCursorKeys(this.signingKeys))[0],
            )
          : null,
    };
  }

  /**
   * The cursor, checked against every published key's cursor keys; when none made it, once more after a look at
   * the key file (another process may sign with a key this one has not loaded yet). Before any query.
   */
  private async openCursor(text: string): Promise<StatementCursor> {
    try {
      return decodeStatementCursor(text, await statementCursorKeys(this.signingKeys));
    } catch (error) {
      if (!(error instanceof ValidationFailedError)) throw error;
      return decodeStatementCursor(text, await statementCursorKeys(this.signingKeys, true));
    }
  }

  /** Page 1: the period's figures and its first rows, in one snapshot. */
  private async firstPage(principal: Principal, account: Account, window: StatementWindow, rows: number) {
    const { name, text, values } = statementQuery(account.accountId, principal, window.from, window.to, rows);
    const [head] = await this.reads.query<FirstPageHead>(text, values, name);
    const checked = checkedHead(head, account.id);
    return {
      head: checked,
      figures: {
        opening: fromDb(checked.opening),
        closing: fromDb(checked.closing),
        totalIn: fromDb(checked.total_in),
        totalOut: fromDb(checked.total_out),
      },
      // A page with a next cursor has postings in the period: last_at is set then.
      upTo: checked.last_at === null ? 0n : instantMicros(checked.last_at),
    };
  }

  /** A later page: its own rows; the figures are page 1's, from the signed cursor. */
  private async laterPage(
    principal: Principal,
    account: Account,
    window: StatementWindow,
    cursor: StatementCursor,
    rows: number,
  ) {
    const { from, to, upTo, position } = window;
    if (upTo === undefined || position === undefined) throw new Error('a later page without its position');
    const { accountId } = account;
    const query = statementPageQuery(
      accountId,
      principal,
      { from, to, upTo, position },
      rows,
      cursor.running,
    );
    let [head] = await this.reads.query<LaterPageHead>(query.text, query.values, query.name);
    if (head?.complete !== true && this.reads.onReplica) {
      // The replica has not replayed up to page 1's last posting (page 1 read a database further on, e.g. another
      // replica or the primary): it would miss rows of the page. The primary has them (decision 0077, amended).
      [head] = await this.reads.queryPrimary<LaterPageHead>(query.text, query.values, query.name);
    }
    if (head && !head.complete) {
      // Postings are never deleted: the cursor's last posting is on the primary, so this is a fault, not a client's.
      throw new Error(`statement cursor: no database holds the period's last posting page 1 read`);
    }
    const { opening, totalIn, totalOut } = cursor;
    return {
      head: checkedHead(head, account.id),
      figures: { opening, closing: closingOf(opening, totalIn, totalOut), totalIn, totalOut },
      upTo: cursor.upTo,
    };
  }
}

/** The head of a page query, or the 404 of an account the principal does not reach, or the 400 of a reversed period. */
function checkedHead<H extends StatementHead>(head: H | undefined, id: string): H {
  if (!head) throw new NotFoundError(id, 'Account not found');
  if (head.reversed) throw ValidationFailedError.single('to', 'invalid', 'to must not be before from');
  return head;
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
