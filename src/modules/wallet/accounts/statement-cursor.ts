import { createCipheriv, createHmac, timingSafeEqual } from 'node:crypto';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { instantMicros, microsInstant } from '#common/http/instant.js';
import type { SigningKeysService } from '#modules/auth/signing-keys.service.js';
import { Money } from '../money.js';

/**
 * A statement page's cursor (docs/decisions/0063, 0077): the statement it belongs to (the account, `from` and the
 * effective `to` of page 1, in µs since the epoch), what page 1 read of it (the time of the period's last posting
 * then, its opening and its totals), and the keyset position of the last movement served (its `created_at` in µs,
 * its posting id, and the running balance after it). Signed and encrypted by the service, opaque to clients.
 */
export interface StatementCursor {
  accountId: string;
  from: bigint;
  to: bigint;
  /** The `created_at` of the period's last posting as page 1 read it: later pages hold none after it. */
  upTo: bigint;
  at: bigint;
  id: string;
  opening: Money;
  totalIn: Money;
  totalOut: Money;
  /** The running balance right after the position's posting: where the next page's running balance starts. */
  running: Money;
}

/** HKDF's info for the cursor's MAC key (SigningKeysService.derivedKeys): this purpose and no other. */
export const STATEMENT_CURSOR_PURPOSE = 'wallet statement cursor v1';
/** HKDF's info for the cursor's cipher key: another purpose, so another key than the MAC's. */
export const STATEMENT_CURSOR_CIPHER_PURPOSE = 'wallet statement cursor cipher v1';

/** The keys of one signing key for a cursor: its MAC's and its cipher's. */
export interface StatementCursorKeys {
  mac: Buffer;
  cipher: Buffer;
}

/**
 * The cursor keys of every published signing key, the signing key's first (it writes new cursors), all from one
 * reading of the key file. `recheck`: as SigningKeysService.derivedKeys.
 */
export async function statementCursorKeys(
  signingKeys: Pick<SigningKeysService, 'derivedKeySets'>,
  recheck = false,
): Promise<StatementCursorKeys[]> {
  const [mac, cipher] = await signingKeys.derivedKeySets(
    [STATEMENT_CURSOR_PURPOSE, STATEMENT_CURSOR_CIPHER_PURPOSE],
    recheck,
  );
  return mac.published.map((key, i) => ({ mac: key, cipher: cipher.published[i] }));
}

/** Where a page starts in the account's postings, as the page query takes it: (created_at text, posting id). */
export interface StatementPosition {
  at: string;
  id: string;
}

/** The period and start of one page, as the query takes them; `upTo` and `position` only after a cursor. */
export interface StatementWindow {
  from: string;
  to: string;
  upTo?: string;
  position?: StatementPosition;
}

/**
 * The form: a version byte, the account (16 bytes), from, to, upTo and at (µs, signed 64 bits each), the posting
 * id (unsigned 64 bits), the four amounts, then the first 16 bytes of HMAC-SHA256 over everything before them
 * (128 bits, half the hash: RFC 2104's advice for a truncated MAC). An amount is one byte (bit 7 the sign, the low
 * five bits the length) and its magnitude in millionths (the scale of every amount and balance column), big-endian,
 * without leading zero bytes. Each column holds at most 10^18 and an account at most 2^63 postings (ids are
 * bigint), so any sum of them is under 2^143 millionths: 18 bytes. The largest cursor is 149 bytes, 199 characters
 * of base64url, under the 200 every cursor may have (pagination.ts).
 *
 * Everything after the account is encrypted (version 2, decision 0077 amended): AES-256-CTR with the cipher key,
 * the MAC as its IV (a synthetic IV, as in SIV: one plaintext, one IV, so the cursor stays deterministic and adds no
 * byte). The MAC is over the plaintext; a reader decrypts, then checks it. Page 1's amounts and times are not
 * readable in a URL, a proxy's log or a browser's history. Version 1 (the same bytes in clear) was never released:
 * it is refused as not valid.
 */
const VERSION = 2;
const CLEAR = 1 + 16;
const FIXED = CLEAR + 5 * 8;
const MAC_BYTES = 16;
const AMOUNT_BYTES = 18;
const SCALE = 6;

const refused = (message: string) => ValidationFailedError.single('cursor', 'invalid', message);

const mac = (key: Buffer, body: Buffer): Buffer =>
  createHmac('sha256', key).update(body).digest().subarray(0, MAC_BYTES);

/** The body with its bytes after the account encrypted, or decrypted (CTR is its own inverse). */
function ctr(key: Buffer, iv: Buffer, body: Buffer): Buffer {
  const cipher = createCipheriv('aes-256-ctr', key, iv);
  return Buffer.concat([body.subarray(0, CLEAR), cipher.update(body.subarray(CLEAR)), cipher.final()]);
}

/** An amount in millionths; more decimals cannot come from the ledger's columns. */
function millionths(value: Money): bigint {
  if (value.decimalPlaces() > SCALE) throw new Error('an amount with more than 6 decimals');
  return BigInt(value.toFixed(SCALE).replace('.', ''));
}

/** Money from millionths: exact, however many digits (the constructor does not round). */
export function fromMillionths(value: bigint): Money {
  const digits = (value < 0n ? -value : value).toString().padStart(SCALE + 1, '0');
  const sign = value < 0n ? '-' : '';
  return new Money(`${sign}${digits.slice(0, -SCALE)}.${digits.slice(-SCALE)}`);
}

/** The closing balance from the opening and the totals, exact (as PostgreSQL's numeric sums them on page 1). */
export const closingOf = (opening: Money, totalIn: Money, totalOut: Money): Money =>
  fromMillionths(millionths(opening) + millionths(totalIn) - millionths(totalOut));

function amountBytes(value: Money): Buffer {
  const units = millionths(value);
  const magnitude = units < 0n ? -units : units;
  const hex = magnitude === 0n ? '' : magnitude.toString(16);
  const bytes = Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
  if (bytes.length > AMOUNT_BYTES) throw new Error('an amount beyond what a statement cursor holds');
  return Buffer.concat([Buffer.from([(units < 0n ? 0x80 : 0) | bytes.length]), bytes]);
}

/** The cursor's text, signed and encrypted with `keys` (the signing key's: statementCursorKeys' first). */
export function encodeStatementCursor(cursor: StatementCursor, keys: StatementCursorKeys): string {
  const fixed = Buffer.alloc(FIXED);
  fixed[0] = VERSION;
  Buffer.from(cursor.accountId.replaceAll('-', ''), 'hex').copy(fixed, 1);
  [cursor.from, cursor.to, cursor.upTo, cursor.at].forEach((micros, i) =>
    fixed.writeBigInt64BE(micros, 17 + 8 * i),
  );
  fixed.writeBigUInt64BE(BigInt(cursor.id), 49);
  const body = Buffer.concat([
    fixed,
    ...[cursor.opening, cursor.totalIn, cursor.totalOut, cursor.running].map(amountBytes),
  ]);
  const tag = mac(keys.mac, body);
  return Buffer.concat([ctr(keys.cipher, tag, body), tag]).toString('base64url');
}

/** The four amounts after the fixed part, or undefined when the bytes are not exactly four amounts. */
function readAmounts(body: Buffer): Money[] | undefined {
  const amounts: Money[] = [];
  let offset = FIXED;
  while (offset < body.length) {
    const head = body[offset];
    const length = head & 0x1f;
    if ((head & 0x60) !== 0 || length > AMOUNT_BYTES || offset + 1 + length > body.length) return undefined;
    const magnitude =
      length === 0 ? 0n : BigInt(`0x${body.toString('hex', offset + 1, offset + 1 + length)}`);
    amounts.push(fromMillionths(head & 0x80 ? -magnitude : magnitude));
    offset += 1 + length;
  }
  return amounts.length === 4 ? amounts : undefined;
}

/** The body of a cursor's bytes, decrypted with the key whose MAC it carries; undefined when no key made it. */
function opened(bytes: Buffer, keys: readonly StatementCursorKeys[]): Buffer | undefined {
  if (bytes.length < FIXED + MAC_BYTES) return undefined;
  const sealed = bytes.subarray(0, bytes.length - MAC_BYTES);
  const signature = bytes.subarray(bytes.length - MAC_BYTES);
  for (const key of keys) {
    const body = ctr(key.cipher, signature, sealed);
    if (timingSafeEqual(mac(key.mac, body), signature)) return body;
  }
  return undefined;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

const uuidText = (bytes: Buffer): string =>
  bytes.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');

/**
 * A cursor encodeStatementCursor wrote with one of `keys` (every published key's: statementCursorKeys), or a 400
 * at `cursor`: no byte of it can be changed, and one of a key retired since is refused like a forged one. The
 * forms before this one (0063's `account|from|to|at|id`, and `created_at|id` before it: unsigned, and without page
 * 1's figures) are refused with their own message.
 */
export function decodeStatementCursor(text: string, keys: readonly StatementCursorKeys[]): StatementCursor {
  const bytes = Buffer.from(text, 'base64url');
  // One text per cursor: base64url's decoder skips what it cannot read and the spare bits of the last character.
  const canonical = bytes.toString('base64url') === text;
  if (!canonical || bytes[0] !== VERSION) {
    // The earlier forms were text (printable ASCII); a binary cursor whose random bytes hold one or four `|` is not.
    const plain = bytes.toString('latin1');
    const fields = PRINTABLE_ASCII.test(plain) ? plain.split('|').length : 0;
    if (canonical && (fields === 2 || fields === 5)) {
      throw refused('cursor is of an earlier form of this route; ask for the first page again');
    }
    throw refused('cursor is not valid');
  }
  const body = opened(bytes, keys);
  const amounts = body ? readAmounts(body) : undefined;
  if (!body || !amounts) {
    throw refused(
      'cursor is not one this service signed, or its key was retired since; ask for the first page again',
    );
  }
  const [from, to, upTo, at] = [0, 1, 2, 3].map((i) => body.readBigInt64BE(17 + 8 * i));
  const [opening, totalIn, totalOut, running] = amounts;
  return {
    accountId: uuidText(body.subarray(1, 17)),
    from,
    to,
    upTo,
    at,
    id: body.readBigUInt64BE(49).toString(),
    opening,
    totalIn,
    totalOut,
    running,
  };
}

/**
 * The period of a page and where it starts. Without a cursor: `from` (default 1970-01-01T00:00:00Z) and `to`
 * (default `now`, the query's own time). With one: the cursor's statement, which the request must not contradict
 * (a `from` or `to` it gives names the cursor's instant, in any offset; one it leaves out is the cursor's), on the
 * same account, and a position inside that period (from, to]. Each refusal is a 400 at `cursor`.
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
    upTo: microsInstant(cursor.upTo),
    position: { at: microsInstant(cursor.at), id: cursor.id },
  };
}
