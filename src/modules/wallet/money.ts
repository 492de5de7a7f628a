import { Decimal } from 'decimal.js';
import { ValidationFailedError } from '#common/errors/domain-errors.js';

/**
 * Money is exact: decimal.js in code, NUMERIC in PostgreSQL, JSON numbers only
 * at the edge. A JSON number arrives as a double; its shortest round-trip text
 * (`String(value)`) is the decimal the client wrote, because the body middleware
 * refuses any number literal a double does not hold exactly (decision 0099).
 */
export const Money = Decimal.clone({
  precision: 40,
  rounding: Decimal.ROUND_HALF_EVEN,
  toExpNeg: -30,
  toExpPos: 40,
});
export type Money = Decimal;

/** ISO 4217 minor units of the currencies an account may hold. */
export const MINOR_UNITS: Readonly<Record<string, number>> = {
  ARS: 2,
  USD: 2,
  EUR: 2,
  BRL: 2,
  UYU: 2,
  CLP: 0,
  PYG: 0,
  BOB: 2,
  PEN: 2,
  MXN: 2,
  COP: 2,
  GBP: 2,
  JPY: 0,
};

/** Percentages (fees) carry up to 4 decimals. */
export const PERCENT_DECIMALS = 4;

/** The largest magnitude accepted for an amount (15 significant digits at most). */
export const MAX_AMOUNT = new Money('999999999999.99');

export function minorUnits(currency: string): number {
  const units = currency === 'PERCENT' ? PERCENT_DECIMALS : MINOR_UNITS[currency];
  if (units === undefined) throw new Error(`unsupported currency ${currency}`);
  return units;
}

export interface AmountRules {
  /** Smallest value allowed (inclusive). */
  min?: Decimal.Value;
  /** Allow negative values (only for balances set by operators). */
  allowNegative?: boolean;
}

/** The decimal the client wrote (never a float compare), within MAX_AMOUNT, or a 400 at `path`. */
export function boundedAmount(text: string, path: string): Money {
  const amount = new Money(text);
  if (amount.abs().gt(MAX_AMOUNT)) {
    throw ValidationFailedError.single(path, 'invalid', `${path} is larger than ${MAX_AMOUNT.toString()}`);
  }
  return amount;
}

/** Converts a JSON number into an exact amount in `currency`, or a 400 at `path`. */
export function parseAmount(value: unknown, currency: string, path: string, rules: AmountRules = {}): Money {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw ValidationFailedError.single(
      path,
      value === undefined ? 'required' : 'invalid',
      `${path} must be a number`,
    );
  }
  const amount = boundedAmount(String(value), path);
  const units = minorUnits(currency);
  if (amount.decimalPlaces() > units) {
    throw ValidationFailedError.single(
      path,
      'invalid',
      `${path} has more than ${units} decimals for ${currency}`,
    );
  }
  if (!rules.allowNegative && amount.isNegative()) {
    throw ValidationFailedError.single(path, 'invalid', `${path} must not be negative`);
  }
  if (rules.min !== undefined && amount.lt(rules.min)) {
    throw ValidationFailedError.single(path, 'invalid', `${path} must be at least ${String(rules.min)}`);
  }
  return amount;
}

/** NUMERIC text from PostgreSQL → Money. */
export function fromDb(value: string | null | undefined): Money {
  return new Money(value ?? '0');
}

/** Money → the exact decimal text a NUMERIC parameter takes (decimal.js, full precision, never a float). */
export function toDb(value: Money): string {
  return value.toFixed();
}

/** Rounds to the currency's minor units, half-even (fees and taxes). */
export function roundTo(value: Money, currency: string): Money {
  return value.toDecimalPlaces(minorUnits(currency), Money.ROUND_HALF_EVEN);
}

/** Money → JSON number, at the edge only. */
export function toJson(value: Money | string): number {
  return (typeof value === 'string' ? new Money(value) : value).toNumber();
}
