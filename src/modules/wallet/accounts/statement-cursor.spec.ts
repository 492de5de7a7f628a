import { randomBytes } from 'node:crypto';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { INSTANT_MICROS_MAX, INSTANT_MICROS_MIN } from '#common/http/instant.js';
import { Money } from '../money.js';
import {
  closingOf,
  decodeStatementCursor,
  encodeStatementCursor,
  fromMillionths,
  type StatementCursor,
  type StatementCursorKeys,
} from './statement-cursor.js';

const newKeys = (): StatementCursorKeys => ({ mac: randomBytes(32), cipher: randomBytes(32) });
const key = newKeys();
const cursor: StatementCursor = {
  accountId: '0192f5e4-7c1a-7b3e-9d2f-5a6b7c8d9e0f',
  from: 1_764_547_200_000_000n,
  to: 1_767_225_599_999_999n,
  upTo: 1_767_000_000_123_456n,
  at: 1_765_000_000_654_321n,
  id: '1042',
  opening: new Money('1234.5'),
  totalIn: new Money('0.000001'),
  totalOut: new Money('999999999999.99'),
  running: new Money('0'),
};

/** The validation item a refused cursor gives. */
function refusal(run: () => unknown): { path: string; type: string; message: string } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationFailedError);
    const [item, ...more] = (error as ValidationFailedError).items;
    expect(more).toStrictEqual([]);
    return item;
  }
  throw new Error('not refused');
}

/** The largest sum of postings: 2^63 - 1 of them (a bigint id each), each the columns' largest (10^18 - 10^-6). */
const LARGEST = (2n ** 63n - 1n) * (10n ** 24n - 1n);

describe('statement cursors (decision 0077)', () => {
  it('give back what they carry, amounts exact', () => {
    const decoded = decodeStatementCursor(encodeStatementCursor(cursor, key), [newKeys(), key]);
    expect({ ...decoded, opening: '', totalIn: '', totalOut: '', running: '' }).toStrictEqual({
      ...cursor,
      opening: '',
      totalIn: '',
      totalOut: '',
      running: '',
    });
    expect([decoded.opening, decoded.totalIn, decoded.totalOut, decoded.running].map(String)).toStrictEqual([
      '1234.5',
      '0.000001',
      '999999999999.99',
      '0',
    ]);
    expect(closingOf(decoded.opening, decoded.totalIn, decoded.totalOut).toFixed()).toBe(
      '-999999998765.489999',
    );
  });

  it('stay within 200 characters at their largest: the schema’s largest sums, negative, the farthest instants', () => {
    const [plus, minus] = [fromMillionths(LARGEST), fromMillionths(-LARGEST)];
    expect(minus.toFixed()).toBe('-9223372036854775806999990776627963145.224193');
    const largest: StatementCursor = {
      accountId: 'ffffffff-ffff-ffff-ffff-ffffffffffff',
      from: INSTANT_MICROS_MIN,
      to: INSTANT_MICROS_MAX,
      upTo: INSTANT_MICROS_MAX,
      at: INSTANT_MICROS_MAX,
      id: String(2n ** 63n - 1n),
      opening: minus,
      totalIn: plus,
      totalOut: plus,
      running: minus,
    };
    const text = encodeStatementCursor(largest, key);
    expect(text.length).toBe(199);
    const decoded = decodeStatementCursor(text, [key]);
    expect(
      [decoded.opening, decoded.totalIn, decoded.totalOut, decoded.running].map((m) => m.toFixed()),
    ).toStrictEqual([minus, plus, plus, minus].map((m) => m.toFixed()));
    expect(closingOf(decoded.opening, decoded.totalIn, decoded.totalOut).toFixed()).toBe(minus.toFixed());
    // Beyond what any sum of the ledger's columns can be, the service refuses to write a cursor rather than cut it.
    expect(() => encodeStatementCursor({ ...largest, totalIn: fromMillionths(2n ** 144n) }, key)).toThrow(
      'an amount beyond what a statement cursor holds',
    );
  });

  it('refuse any byte changed, a key that did not sign them, and a shortened text', () => {
    const text = encodeStatementCursor(cursor, key);
    const bytes = Buffer.from(text, 'base64url');
    const unsigned =
      'cursor is not one this service signed, or its key was retired since; ask for the first page again';
    for (let i = 0; i < bytes.length; i++) {
      for (const bit of [0x01, 0x80]) {
        const changed = Buffer.from(bytes);
        changed[i] ^= bit;
        const item = refusal(() => decodeStatementCursor(changed.toString('base64url'), [key]));
        expect([i, bit, item.path, item.type]).toStrictEqual([i, bit, 'cursor', 'invalid']);
      }
    }
    // Each character of the text: another one decodes to other bytes, or is not the one text of those bytes.
    for (let i = 0; i < text.length; i++) {
      const other = text[i] === 'A' ? 'B' : 'A';
      const item = refusal(() =>
        decodeStatementCursor(`${text.slice(0, i)}${other}${text.slice(i + 1)}`, [key]),
      );
      expect([i, item.path, item.type]).toStrictEqual([i, 'cursor', 'invalid']);
    }
    expect(refusal(() => decodeStatementCursor(text, [newKeys()])).message).toBe(unsigned);
    // Each key of the pair: another cipher key decrypts to other bytes, another MAC key makes another MAC.
    expect(refusal(() => decodeStatementCursor(text, [{ ...key, cipher: randomBytes(32) }])).message).toBe(
      unsigned,
    );
    expect(refusal(() => decodeStatementCursor(text, [{ ...key, mac: randomBytes(32) }])).message).toBe(
      unsigned,
    );
    expect(refusal(() => decodeStatementCursor(text, [])).message).toBe(unsigned);
    expect(
      refusal(() => decodeStatementCursor(bytes.subarray(0, -1).toString('base64url'), [key])).message,
    ).toBe(unsigned);
    expect(
      refusal(() => decodeStatementCursor(bytes.subarray(0, 40).toString('base64url'), [key])).message,
    ).toBe(unsigned);
    expect(refusal(() => decodeStatementCursor(`${text}=`, [key])).message).toBe('cursor is not valid');
    expect(refusal(() => decodeStatementCursor('', [key])).message).toBe('cursor is not valid');
  });

  it('refuse the earlier, unsigned forms with their own message', () => {
    const earlier = [
      `${cursor.accountId}|${cursor.from}|${cursor.to}|${cursor.at}|${cursor.id}`,
      `2026-12-01T00:00:00.000000Z|1042`,
    ];
    for (const form of earlier) {
      expect(
        refusal(() => decodeStatementCursor(Buffer.from(form).toString('base64url'), [key])),
      ).toStrictEqual({
        path: 'cursor',
        type: 'invalid',
        message: 'cursor is of an earlier form of this route; ask for the first page again',
      });
    }
  });

  it('carry page 1’s amounts, times and position encrypted: none of their bytes is in the cursor in clear', () => {
    // Amounts whose encoding (decision 0077: a head byte, then the magnitude in millionths) is long enough that
    // finding it by chance is out of the question.
    const figures: StatementCursor = {
      ...cursor,
      opening: new Money('8765432.123456'),
      totalIn: new Money('-1234567.654321'),
      totalOut: new Money('98765.4321'),
      running: new Money('-555555.555555'),
    };
    const text = encodeStatementCursor(figures, key);
    const bytes = Buffer.from(text, 'base64url');
    const millionths = (amount: Money) => BigInt(amount.abs().times(1_000_000).toFixed(0));
    for (const amount of [figures.opening, figures.totalIn, figures.totalOut, figures.running]) {
      const hex = millionths(amount).toString(16);
      const magnitude = Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
      const head = (amount.isNegative() ? 0x80 : 0) | magnitude.length;
      expect([amount.toFixed(), bytes.includes(magnitude)]).toStrictEqual([amount.toFixed(), false]);
      expect(bytes.includes(Buffer.concat([Buffer.from([head]), magnitude]))).toBe(false);
    }
    for (const [name, value] of [
      ['from', figures.from],
      ['to', figures.to],
      ['upTo', figures.upTo],
      ['at', figures.at],
      ['id', BigInt(figures.id)],
    ] as const) {
      const encoded = Buffer.alloc(8);
      encoded.writeBigInt64BE(value);
      // The low six bytes: the top ones of an instant of this century are the same for every instant near it.
      expect([name, bytes.includes(encoded.subarray(2))]).toStrictEqual([name, false]);
    }
    // The version and the account stay in clear (the account is in the route's path anyway).
    expect(bytes[0]).toBe(2);
    expect(bytes.subarray(1, 17).toString('hex')).toBe(figures.accountId.replaceAll('-', ''));
    // One plaintext, one cursor (the IV is the MAC); another plaintext, other bytes.
    expect(encodeStatementCursor(figures, key)).toBe(text);
    const decoded = decodeStatementCursor(text, [key]);
    expect([decoded.opening, decoded.totalIn, decoded.totalOut, decoded.running].map(String)).toStrictEqual([
      '8765432.123456',
      '-1234567.654321',
      '98765.4321',
      '-555555.555555',
    ]);
  });

  it('refuse a binary cursor whose bytes hold one `|` as not valid, not as an earlier (text) form', () => {
    // The encrypted bytes are random per key: with exactly one 0x7c among them, the check of the earlier forms
    // (`created_at|id`) took a binary cursor for text (about one run in six of the test below).
    const bytes = Buffer.from(encodeStatementCursor(cursor, key), 'base64url');
    bytes[0] = 1;
    for (let i = 1; i < bytes.length; i++) if (bytes[i] === 0x7c) bytes[i] = 0;
    bytes[20] = 0x7c;
    expect(refusal(() => decodeStatementCursor(bytes.toString('base64url'), [key]))).toStrictEqual({
      path: 'cursor',
      type: 'invalid',
      message: 'cursor is not valid',
    });
  });

  it('refuse a cursor of version 1 (the same bytes in clear, never released) as not valid, whatever follows', () => {
    const bytes = Buffer.from(encodeStatementCursor(cursor, key), 'base64url');
    bytes[0] = 1;
    expect(refusal(() => decodeStatementCursor(bytes.toString('base64url'), [key]))).toStrictEqual({
      path: 'cursor',
      type: 'invalid',
      message: 'cursor is not valid',
    });
  });
});
