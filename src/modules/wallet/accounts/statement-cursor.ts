import { ValidationFailedError } from '#common/errors/domain-errors.js';
import {
  INSTANT_MICROS_MAX,
  INSTANT_MICROS_MIN,
  instantMicros,
  microsInstant,
} from '#common/http/instant.js';
import { UUID_PATTERN } from '#common/ids/uuid.js';

/**
 * A statement page's cursor (docs/decisions/0063): the statement it belongs to (the account, `from` and the
 * effective `to` of page 1, in µs since the epoch) and the keyset position of the last movement served (its
 * `created_at` in µs and its posting id). Opaque to clients: base64url of `account|from|to|at|id`.
 */
export interface StatementCursor {
  accountId: string;
  from: bigint;
  to: bigint;
  at: bigint;
  id: string;
}

/** Where a page starts in the account's postings, as statementQuery takes it: (created_at text, posting id). */
export interface StatementPosition {
  at: string;
  id: string;
}

/** The period and start of one page, as the query takes them. */
export interface StatementWindow {
  from: string;
  to: string;
  position?: StatementPosition;
}

export const encodeStatementCursor = (cursor: StatementCursor): string =>
  Buffer.from(
    [cursor.accountId, cursor.from, cursor.to, cursor.at, cursor.id].map(String).join('|'),
  ).toString('base64url');

const refused = (message: string) => ValidationFailedError.single('cursor', 'invalid', message);

/** An instant of a cursor: decimal µs that parseInstant could have given (PostgreSQL stores them all). */
function micros(text: string | undefined): bigint | undefined {
  if (text === undefined || !/^-?\d{1,18}$/.test(text)) return undefined;
  const value = BigInt(text);
  return value >= INSTANT_MICROS_MIN && value <= INSTANT_MICROS_MAX ? value : undefined;
}

/**
 * A cursor encodeStatementCursor wrote, or a 400 at `cursor`. The form before decision 0063 (`created_at|id`,
 * no account, no period) is refused with its own message: it cannot give page 1's `to` back.
 */
export function decodeStatementCursor(cursor: string): StatementCursor {
  const fields = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (fields.length === 2) {
    throw refused('cursor is of an earlier form of this route; ask for the first page again');
  }
  const [accountId, fromText, toText, atText, id] = fields;
  const [from, to, at] = [fromText, toText, atText].map(micros);
  if (
    fields.length !== 5 ||
    !UUID_PATTERN.test(accountId) ||
    accountId !== accountId.toLowerCase() ||
    from === undefined ||
    to === undefined ||
    at === undefined ||
    !/^\d{1,18}$/.test(id)
  ) {
    throw refused('cursor is not valid');
  }
  return { accountId, from, to, at, id };
}

/**
 * The period of a page and where it starts. Without a cursor: `from` (default 1970-01-01T00:00:00Z) and `to`
 * (default `now`, the query's own time). With one: the cursor's statement, which the request must not contradict
 * (a `from` or `to` it gives names the cursor's instant, in any offset; one it leaves out is the cursor's), on the
 * same account, and a position inside that period (from, to]: the running balance starts from the balance at the
 * position, which is the period's only if no posting of the period lies before it. Each refusal is a 400 at
 * `cursor`.
 */
export function statementWindow(
  accountId: string,
  query: { from?: string; to?: string },
  defaults: { from: string; to: string },
  cursor: StatementCursor | undefined,
): StatementWindow {
  if (!cursor) return { from: query.from ?? defaults.from, to: query.to ?? defaults.to };
  if (cursor.accountId !== accountId) throw refused('cursor is of another account');
  for (const name of ['from', 'to'] as const) {
    const given = query[name];
    if (given !== undefined && instantMicros(given) !== cursor[name]) {
      throw refused(
        `cursor is of a statement with another ${name}: give page 1's from and to, or leave them out`,
      );
    }
  }
  if (cursor.at <= cursor.from || cursor.at > cursor.to) {
    throw refused('cursor is outside the period (from, to]');
  }
  return {
    from: microsInstant(cursor.from),
    to: microsInstant(cursor.to),
    position: { at: microsInstant(cursor.at), id: cursor.id },
  };
}
