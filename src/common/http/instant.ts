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

/** A date (YYYY-MM-DD, midnight UTC) or a UTC date-time (YYYY-MM-DDThh:mm[:ss[.fraction]]Z) that exists. */
const DATE_OR_UTC_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(T(\d{2}):(\d{2})(:(\d{2})(\.\d+)?)?Z)?$/;

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
