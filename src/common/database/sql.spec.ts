import { closedSetLiteral, listFetchSize, statementName } from './sql.js';

describe('named list statements (sql.ts)', () => {
  it('statementName: one name per text, the same text the same name, within a statement name’s length', () => {
    const a = statementName('wallet_transfer_list', 'SELECT 1 LIMIT 11');
    const b = statementName('wallet_transfer_list', 'SELECT 1 LIMIT 21');
    expect(a).not.toBe(b);
    expect(statementName('wallet_transfer_list', 'SELECT 1 LIMIT 11')).toBe(a);
    expect(a).toMatch(/^wallet_transfer_list_[A-Za-z0-9_-]{22}$/);
    // PostgreSQL truncates identifiers at 63 bytes: two names must not meet there.
    expect(a.length).toBeLessThanOrEqual(63);
  });

  it('closedSetLiteral: a value of the set as a literal; anything else, a quote above all, is an error', () => {
    const set = ['INICIADO', 'ACREDITADO', 'kyc_steep_update'];
    expect(closedSetLiteral('INICIADO', set)).toBe("'INICIADO'");
    expect(closedSetLiteral('kyc_steep_update', set)).toBe("'kyc_steep_update'");
    for (const value of ['iniciado', "INICIADO'; DROP TABLE transfers; --", '', 'EN_CURSO']) {
      expect(() => closedSetLiteral(value, set)).toThrow('not a value of the closed set');
    }
    expect(() => closedSetLiteral("A'B", ["A'B"])).toThrow('not a value of the closed set');
    expect(() => closedSetLiteral('a\\b', ['a\\b'])).toThrow('not a value of the closed set');
  });

  it('listFetchSize: the smallest fixed size that holds the rows asked for, so a page size maps to few texts', () => {
    expect([1, 2, 3, 11, 12, 21, 50, 51, 52, 101, 102, 201, 501].map(listFetchSize)).toStrictEqual([
      2, 2, 11, 11, 21, 21, 51, 51, 101, 101, 201, 201, 501,
    ]);
    expect(new Set(Array.from({ length: 501 }, (_, i) => listFetchSize(i + 1))).size).toBe(7);
  });
});
