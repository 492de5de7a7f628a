import { INSTANT_MICROS_MAX, INSTANT_MICROS_MIN, instantMicros, microsInstant } from './instant.js';

describe('instantMicros and microsInstant', () => {
  it('read one instant written in any offset, to the microsecond, as one number', () => {
    const utc = instantMicros('2026-11-01T03:00:00.000001Z');
    expect(utc).toBe(1_793_502_000_000_001n);
    expect(instantMicros('2026-11-01T00:00:00.000001-03:00')).toBe(utc);
    expect(instantMicros('2026-11-01T03:00:00.000001+00:00')).toBe(utc);
    expect(instantMicros('2026-11-01t08:30:00.000001+05:30')).toBe(utc);
    expect(instantMicros('2026-11-01T03:00:00.5Z')).toBe(utc - 1n + 500_000n);
    expect(instantMicros('1970-01-01T00:00:00Z')).toBe(0n);
    expect(instantMicros('1969-12-31T23:59:59.999999Z')).toBe(-1n);
    expect(() => instantMicros('2026-11-01')).toThrow();
  });

  it('write the UTC text PostgreSQL reads back, before 1970, in 1 BC and in the year 10000 alike', () => {
    expect(microsInstant(1_793_502_000_000_001n)).toBe('2026-11-01T03:00:00.000001Z');
    expect(microsInstant(0n)).toBe('1970-01-01T00:00:00.000000Z');
    expect(microsInstant(-1n)).toBe('1969-12-31T23:59:59.999999Z');
    // PostgreSQL's own answers for these instants (`$1::timestamptz::text`):
    expect(microsInstant(INSTANT_MICROS_MIN)).toBe('0001-12-31T08:01:00.000000Z BC');
    expect(INSTANT_MICROS_MIN).toBe(-62_135_654_340_000_000n);
    expect(microsInstant(INSTANT_MICROS_MAX)).toBe('10000-01-01T15:58:59.999999Z');
    expect(INSTANT_MICROS_MAX).toBe(253_402_300_799_999_999n + 57_540_000_000n);
    for (const text of [
      '0001-01-01T00:00:00Z',
      '2026-02-28T23:59:59.123456Z',
      '9999-12-31T23:59:59.999999Z',
    ]) {
      expect(microsInstant(instantMicros(text))).toBe(text.replace(/(:\d{2})Z$/, '$1.000000Z'));
    }
  });
});
