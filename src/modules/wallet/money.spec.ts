import { ValidationFailedError, type ValidationItem } from '#common/errors/domain-errors.js';
import { fromDb, MAX_AMOUNT, minorUnits, Money, parseAmount, PERCENT_DECIMALS, toJson } from './money.js';
import { periodsOf } from './periods.js';

/** The validation items of what `parse` throws (fails the test if it does not throw one). */
function refusal(parse: () => unknown): ValidationItem[] {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationFailedError);
    return (error as ValidationFailedError).items;
  }
  throw new Error('expected a ValidationFailedError');
}

describe('parseAmount: JSON numbers into exact amounts', () => {
  it('0.1 + 0.2 is exactly 0.3 in Money arithmetic (and not in floats)', () => {
    expect(0.1 + 0.2).not.toBe(0.3);
    const sum = parseAmount(0.1, 'ARS', 'a').plus(parseAmount(0.2, 'ARS', 'b'));
    expect(sum.toFixed()).toBe('0.3');
    expect(sum.eq(parseAmount(0.3, 'ARS', 'c'))).toBe(true);
    expect(toJson(sum)).toBe(0.3);
    // Ten times 0.1 is exactly 1, and 1.1 − 1 is exactly 0.1.
    let total = new Money(0);
    for (let i = 0; i < 10; i++) total = total.plus(parseAmount(0.1, 'ARS', 'x'));
    expect(total.toFixed()).toBe('1');
    expect(parseAmount(1.1, 'ARS', 'x').minus(1).toFixed()).toBe('0.1');
  });

  it('the float sum 0.1 + 0.2 itself is refused: it has 17 decimals', () => {
    expect(refusal(() => parseAmount(0.1 + 0.2, 'ARS', 'balance'))).toStrictEqual([
      { path: 'balance', type: 'invalid', message: expect.stringMatching(/decimals/) },
    ]);
  });

  it('keeps the decimal the client wrote', () => {
    for (const [value, text] of [
      [0, '0'],
      [1, '1'],
      [0.01, '0.01'],
      [19.99, '19.99'],
      [1234.5, '1234.5'],
      [100.07, '100.07'],
      [999_999_999_999.99, '999999999999.99'],
    ] as const) {
      expect(parseAmount(value, 'ARS', 'amount').toFixed()).toBe(text);
    }
  });

  it('refuses 3 decimals for ARS (2 minor units) at the given path', () => {
    expect(refusal(() => parseAmount(1.001, 'ARS', 'monthlyDepositLimit'))).toStrictEqual([
      {
        path: 'monthlyDepositLimit',
        type: 'invalid',
        message: expect.stringMatching(/more than 2 decimals/),
      },
    ]);
    expect(refusal(() => parseAmount(0.005, 'ARS', 'fees'))[0].path).toBe('fees');
    expect(parseAmount(1.01, 'ARS', 'x').toFixed()).toBe('1.01');
  });

  it('refuses any decimal for CLP (0 minor units), accepts integers', () => {
    expect(minorUnits('CLP')).toBe(0);
    expect(refusal(() => parseAmount(10.5, 'CLP', 'amount'))[0]).toMatchObject({
      path: 'amount',
      type: 'invalid',
    });
    expect(parseAmount(1500, 'CLP', 'amount').toFixed()).toBe('1500');
  });

  it('refuses negative amounts unless allowed', () => {
    expect(refusal(() => parseAmount(-0.01, 'ARS', 'balance'))).toStrictEqual([
      { path: 'balance', type: 'invalid', message: expect.stringMatching(/negative/) },
    ]);
    expect(parseAmount(-5.25, 'ARS', 'balance', { allowNegative: true }).toFixed()).toBe('-5.25');
    // -0 is zero, not negative.
    expect(parseAmount(-0, 'ARS', 'balance').isZero()).toBe(true);
  });

  it('applies a minimum', () => {
    expect(refusal(() => parseAmount(0.99, 'ARS', 'amount', { min: 1 }))[0]).toMatchObject({
      path: 'amount',
      type: 'invalid',
    });
    expect(parseAmount(1, 'ARS', 'amount', { min: 1 }).toFixed()).toBe('1');
  });

  it('refuses NaN, Infinity, strings, null, booleans and objects; undefined is required', () => {
    for (const value of [NaN, Infinity, -Infinity, '10', '0.1', null, true, {}, [], 10n]) {
      expect(refusal(() => parseAmount(value, 'ARS', 'balance'))).toStrictEqual([
        { path: 'balance', type: 'invalid', message: expect.any(String) },
      ]);
    }
    expect(refusal(() => parseAmount(undefined, 'ARS', 'balance'))).toStrictEqual([
      { path: 'balance', type: 'required', message: expect.any(String) },
    ]);
  });

  it('refuses amounts beyond MAX_AMOUNT, in both directions', () => {
    expect(MAX_AMOUNT.toFixed()).toBe('999999999999.99');
    expect(parseAmount(999_999_999_999.99, 'ARS', 'x').eq(MAX_AMOUNT)).toBe(true);
    for (const value of [1_000_000_000_000, 1e15, 1e21, 1e308, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE]) {
      expect(refusal(() => parseAmount(value, 'ARS', 'balance'))).toStrictEqual([
        { path: 'balance', type: 'invalid', message: expect.stringMatching(/larger than/) },
      ]);
    }
    expect(refusal(() => parseAmount(-1e13, 'ARS', 'x', { allowNegative: true }))[0].type).toBe('invalid');
  });

  it('refuses tiny amounts in exponent notation (1e-7 has 7 decimals)', () => {
    expect(refusal(() => parseAmount(1e-7, 'ARS', 'x'))[0].type).toBe('invalid');
    expect(refusal(() => parseAmount(5e-324, 'ARS', 'x'))[0].type).toBe('invalid');
  });

  it('percentages carry up to 4 decimals', () => {
    expect(PERCENT_DECIMALS).toBe(4);
    expect(minorUnits('PERCENT')).toBe(4);
    expect(parseAmount(1.2345, 'PERCENT', 'amount').toFixed()).toBe('1.2345');
    expect(parseAmount(100, 'PERCENT', 'amount').toFixed()).toBe('100');
    expect(refusal(() => parseAmount(1.23456, 'PERCENT', 'amount'))).toStrictEqual([
      { path: 'amount', type: 'invalid', message: expect.stringMatching(/more than 4 decimals/) },
    ]);
  });

  it('an unsupported currency is a programming error, not a 400', () => {
    expect(() => minorUnits('XXX')).toThrow(/unsupported currency/);
    expect(() => parseAmount(1, 'XXX', 'x')).toThrow(/unsupported currency/);
  });
});

describe('NUMERIC text and JSON numbers', () => {
  it('reads NUMERIC text exactly; null is zero', () => {
    expect(fromDb('123.450000').toFixed()).toBe('123.45');
    expect(fromDb('0.300000').eq(fromDb('0.1').plus(fromDb('0.2')))).toBe(true);
    expect(fromDb(null).isZero()).toBe(true);
    expect(fromDb(undefined).isZero()).toBe(true);
  });

  it('turns amounts into the nearest JSON number at the edge only', () => {
    expect(toJson('0.300000')).toBe(0.3);
    expect(toJson(new Money('999999999999.99'))).toBe(999_999_999_999.99);
    expect(toJson('-12.5')).toBe(-12.5);
    expect(toJson('0')).toBe(0);
  });
});

describe('periodsOf: month and year keys on the configured calendar', () => {
  const BA = 'America/Argentina/Buenos_Aires';

  it('2026-12-01T02:00:00Z is still November 2026 in Buenos Aires (UTC−3)', () => {
    expect(periodsOf(new Date('2026-12-01T02:00:00Z'), BA)).toStrictEqual({
      month: 'M2026-11',
      year: 'Y2026',
    });
    expect(periodsOf(new Date('2026-12-01T02:59:59.999Z'), BA)).toStrictEqual({
      month: 'M2026-11',
      year: 'Y2026',
    });
    expect(periodsOf(new Date('2026-12-01T03:00:00Z'), BA)).toStrictEqual({
      month: 'M2026-12',
      year: 'Y2026',
    });
    // The same instant in UTC is already December.
    expect(periodsOf(new Date('2026-12-01T02:00:00Z'), 'UTC')).toStrictEqual({
      month: 'M2026-12',
      year: 'Y2026',
    });
  });

  it('New Year: the year key changes at 03:00Z in Buenos Aires', () => {
    expect(periodsOf(new Date('2027-01-01T02:30:00Z'), BA)).toStrictEqual({
      month: 'M2026-12',
      year: 'Y2026',
    });
    expect(periodsOf(new Date('2027-01-01T03:00:00Z'), BA)).toStrictEqual({
      month: 'M2027-01',
      year: 'Y2027',
    });
  });

  it('zero-pads the month and works east of UTC too', () => {
    expect(periodsOf(new Date('2026-03-15T12:00:00Z'), BA).month).toBe('M2026-03');
    expect(periodsOf(new Date('2026-02-28T20:00:00Z'), 'Asia/Tokyo')).toStrictEqual({
      month: 'M2026-03',
      year: 'Y2026',
    });
  });

  it('answers within one second from the last answer, and asks again for the next second or another zone', () => {
    const before = periodsOf(new Date('2026-12-01T02:59:59.000Z'), BA);
    expect(periodsOf(new Date('2026-12-01T02:59:59.999Z'), BA)).toBe(before);
    expect(before.month).toBe('M2026-11');
    expect(periodsOf(new Date('2026-12-01T03:00:00.000Z'), BA).month).toBe('M2026-12');
    expect(periodsOf(new Date('2026-12-01T02:59:59.500Z'), 'UTC').month).toBe('M2026-12');
    expect(periodsOf(new Date('2026-12-01T02:59:59.500Z'), BA).month).toBe('M2026-11');
    // Kathmandu is UTC+05:45: its months start at hh:15 UTC, on a whole second like every offset.
    expect(periodsOf(new Date('2026-11-30T18:14:59.999Z'), 'Asia/Kathmandu').month).toBe('M2026-11');
    expect(periodsOf(new Date('2026-11-30T18:15:00.000Z'), 'Asia/Kathmandu').month).toBe('M2026-12');
    expect(() => periodsOf(new Date(Number.NaN), BA)).toThrow(RangeError);
  });
});
