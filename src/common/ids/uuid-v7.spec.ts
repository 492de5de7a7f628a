import { UUID_PATTERN } from './uuid.js';
import { uuidv7, UuidV7Generator } from './uuid-v7.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The 48-bit millisecond time an id carries. */
const timeOf = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
/** The 12 bits after the version. */
const sequenceOf = (id: string) => parseInt(id.slice(15, 18), 16);

describe('uuidv7', () => {
  it('lays out the time in milliseconds, version 7 and the RFC 9562 variant, as PostgreSQL 18 does', () => {
    const before = Date.now();
    const id = uuidv7();
    const after = Date.now();
    expect(id).toMatch(V7);
    expect(id).toMatch(UUID_PATTERN);
    expect(timeOf(id)).toBeGreaterThanOrEqual(before);
    expect(timeOf(id)).toBeLessThanOrEqual(after);
  });

  it('only grows: 10,000 ids in a row, each greater than the last, none twice', () => {
    const ids = Array.from({ length: 10_000 }, () => uuidv7());
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('within one millisecond counts up, and past 4,096 ids borrows the next millisecond', () => {
    const generator = new UuidV7Generator(() => 1_764_000_000_000);
    const ids = Array.from({ length: 4_097 }, () => generator.next());
    expect(ids.slice(0, 4_096).map(timeOf)).toEqual(Array(4_096).fill(1_764_000_000_000));
    expect(ids.slice(0, 3).map(sequenceOf)).toEqual([0, 1, 2]);
    expect(sequenceOf(ids[4_095])).toBe(0xfff);
    expect(timeOf(ids[4_096])).toBe(1_764_000_000_001);
    expect(sequenceOf(ids[4_096])).toBe(0);
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
  });

  it('does not follow a clock that steps back: the ids keep growing on the last millisecond', () => {
    const times = [1_764_000_000_500, 1_764_000_000_100, 1_764_000_000_499, 1_764_000_000_501];
    const generator = new UuidV7Generator(() => times.shift()!);
    const ids = [generator.next(), generator.next(), generator.next(), generator.next()];
    expect(ids.map(timeOf)).toEqual([
      1_764_000_000_500, 1_764_000_000_500, 1_764_000_000_500, 1_764_000_000_501,
    ]);
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
  });
});
