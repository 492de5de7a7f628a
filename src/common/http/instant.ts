import { ValidateBy } from 'class-validator';
import { ValidationFailedError } from '../errors/domain-errors.js';

/** RFC 3339 date-time: a date, a time (optional fraction) and an offset (Z or ±hh:mm). */
export const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?([Zz]|[+-](\d{2}):(\d{2}))$/;

/**
 * An RFC 3339 instant as the text PostgreSQL takes (microseconds kept), or a 400 at `path`. The date and time
 * must exist (no 2026-02-30, no hour 24); a leap second is refused. Every instant a route takes is read here
 * (a statement's period and cursor, the audit trail's window): an offset is required, so no answer depends on
 * the server's time zone.
 */
export function parseInstant(value: string | undefined, path: string): string {
  if (value === undefined || value === '') {
    throw ValidationFailedError.single(path, 'required', `${path} is required`);
  }
  const match = RFC3339.exec(value);
  const invalid = () =>
    ValidationFailedError.single(
      path,
      'invalid',
      `${path} must be an RFC 3339 date-time (e.g. 2026-01-31T23:59:59Z)`,
    );
  if (!match) throw invalid();
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // not Date.UTC: it reads years 0-99 as 1900-1999
  // PostgreSQL takes offsets up to ±15:59 (a larger one is an error there: 500).
  const offsetOk = match[9] === undefined || (Number(match[9]) <= 15 && Number(match[10]) <= 59);
  if (
    date.getUTCFullYear() !== year ||
    date.getUTCMonth() !== month - 1 ||
    date.getUTCDate() !== day ||
    year < 1 ||
    hour > 23 ||
    minute > 59 ||
    second > 59 ||
    !offsetOk
  ) {
    throw invalid();
  }
  return value.toUpperCase();
}

/**
 * An RFC 3339 instant (as parseInstant returns it, or as PostgreSQL's `to_char` writes a UTC time) in
 * microseconds since 1970-01-01T00:00:00Z: two texts of one instant, in any offsets, give the same number.
 */
export function instantMicros(instant: string): bigint {
  const match = RFC3339.exec(instant);
  if (!match) throw new Error(`not an RFC 3339 date-time: ${instant}`);
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  const offsetMinutes =
    match[9] === undefined
      ? 0
      : (match[8].startsWith('-') ? -1 : 1) * (Number(match[9]) * 60 + Number(match[10]));
  const fraction = BigInt((match[7] ?? '.').slice(1).padEnd(6, '0'));
  return BigInt(date.getTime() - offsetMinutes * 60_000) * 1000n + fraction;
}

/** The earliest and latest instants parseInstant takes (years 0001-9999 in the farthest offsets), in µs. */
export const INSTANT_MICROS_MIN = instantMicros('0001-01-01T00:00:00+15:59');
export const INSTANT_MICROS_MAX = instantMicros('9999-12-31T23:59:59.999999-15:59');

/**
 * The text PostgreSQL reads back as the instant `micros` (instantMicros' inverse): UTC with microseconds, e.g.
 * `2026-11-01T03:00:00.000000Z`. Between INSTANT_MICROS_MIN and INSTANT_MICROS_MAX the UTC year may be 1 BC
 * (`0001-12-31T08:01:00.000000Z BC`) or 10000, which PostgreSQL takes as written here.
 */
export function microsInstant(micros: bigint): string {
  let seconds = micros / 1_000_000n;
  let fraction = micros % 1_000_000n;
  if (fraction < 0n) {
    fraction += 1_000_000n;
    seconds -= 1n;
  }
  const date = new Date(Number(seconds) * 1000);
  const year = date.getUTCFullYear(); // 0 is 1 BC
  const two = (n: number) => String(n).padStart(2, '0');
  return (
    `${String(year > 0 ? year : 1 - year).padStart(4, '0')}-${two(date.getUTCMonth() + 1)}-${two(date.getUTCDate())}` +
    `T${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:${two(date.getUTCSeconds())}` +
    `.${String(fraction).padStart(6, '0')}Z${year > 0 ? '' : ' BC'}`
  );
}

/** An RFC 3339 date-time with its offset as a query parameter (a statement's period, `at`, the audit trail's). */
export const DATE_TIME_QUERY_SCHEMA = { type: 'string', format: 'date-time', maxLength: 64 } as const;

/** A date (YYYY-MM-DD, midnight UTC) or a UTC date-time (YYYY-MM-DDThh:mm[:ss[.fraction]]Z) that exists. */
export const DATE_OR_UTC_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(T(\d{2}):(\d{2})(:(\d{2})(\.\d+)?)?Z)?$/;

/**
 * Whether `value` is a date or UTC date-time the transaction list's `from`/`to` take: the form, and a day, hour,
 * minute and second that exist (JavaScript's Date would read 2024-02-30 as March 1st).
 */
export function isDateOrUtcInstant(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const match = DATE_OR_UTC_INSTANT.exec(value);
  if (!match) return false;
  const [year, month, day] = match.slice(1, 4).map(Number);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  const [hour, minute, second] = [match[5], match[6], match[8]].map((part) => Number(part ?? 0));
  return (
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59
  );
}

/** The class-validator decorator of isDateOrUtcInstant, its message naming the property. */
export const IsDateOrUtcInstant = (property: string) =>
  ValidateBy(
    { name: 'isDateOrUtcInstant', validator: { validate: isDateOrUtcInstant } },
    { message: `${property} must be an ISO date` },
  );
