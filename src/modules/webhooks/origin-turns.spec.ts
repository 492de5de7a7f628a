import { OriginTurns } from './origin-turns.js';

const LIMITS = { postsPerOrigin: 2, waitingPerOrigin: 4, shortWaitMs: 1_000, laterMaxMs: 60_000 };
const A = 'https://a.example';
const B = 'https://b.example';

/** Admits `count` claims of `origin` at `now`: what admit answered for each. */
function admitMany(turns: OriginTurns, origin: string, count: number, now: number): (number | undefined)[] {
  return Array.from({ length: count }, () => turns.admit(origin, now));
}

/** Each delay as the one expected at its place when it is within that one's ±10 % jitter, as it is otherwise. */
const unjittered = (delays: (number | undefined)[], expected: number[]) =>
  delays.map((delay, n) =>
    delay !== undefined && delay >= expected[n] * 0.9 && delay <= expected[n] * 1.1 ? expected[n] : delay,
  );

describe('OriginTurns', () => {
  it('lets in the POSTs and the claims that may wait; a claim beyond them, with no pace known, is due after the short wait', () => {
    const turns = new OriginTurns(LIMITS);
    expect(admitMany(turns, A, 6, 0)).toEqual(Array(6).fill(undefined));
    expect(unjittered(admitMany(turns, A, 1, 0), [1_000])).toEqual([1_000]);
    // Another origin is not held up by A's claims.
    expect(turns.admit(B, 0)).toBeUndefined();
    // A claim done makes room for the next.
    turns.done(A);
    expect(turns.admit(A, 0)).toBeUndefined();
  });

  it('lets a fast origin take more while the wait for a POST slot stays short', () => {
    const turns = new OriginTurns(LIMITS);
    const started = turns.posting(A, 0);
    turns.posted(A, started, 10); // 10 ms a POST, 2 at a time: 202 claims held get their slot within 1 s
    // A POST in flight for less than the short wait says nothing yet (a long task in the process ages them all).
    turns.posting(A, 10);
    expect(admitMany(turns, A, 202, 900)).toEqual(Array(202).fill(undefined));
    // The next one would wait 101 rounds of 10 ms: beyond the short wait. It is due after those.
    expect(unjittered(admitMany(turns, A, 1, 900), [1_010])).toEqual([1_010]);
    // A pace from more than a minute ago says nothing now: only the first claims are let in.
    const idle = new OriginTurns(LIMITS);
    idle.posted(A, idle.posting(A, 0), 10);
    expect(admitMany(idle, A, 7, 70_000).filter((answer) => answer === undefined)).toHaveLength(6);
  });

  it('spreads the claims of a receiver that stopped answering over the time it needs, up to the latest', () => {
    const turns = new OriginTurns(LIMITS);
    // A POST that took 1 s, then two in flight for 4 s: the oldest one's age is the pace.
    turns.posted(A, turns.posting(A, 0), 1_000);
    turns.posting(A, 1_000);
    turns.posting(A, 1_000);
    expect(admitMany(turns, A, 6, 5_000)).toEqual(Array(6).fill(undefined));
    // 6 claims held, 2 at a time: 3 rounds of 4 s before its own, then each one 4 s / 2 later than the one before.
    const delays = admitMany(turns, A, 3, 5_000);
    expect(unjittered(delays, [12_000, 14_000, 16_000])).toEqual([12_000, 14_000, 16_000]);
    // Never later than the latest.
    const far = admitMany(turns, A, 40, 5_000);
    expect(unjittered(far.slice(-1), [60_000])).toEqual([60_000]);
    expect(far.filter((delay) => delay === undefined || delay > 66_000)).toEqual([]);
  });

  it('forgets idle origins only when many are known', () => {
    const turns = new OriginTurns(LIMITS);
    for (let n = 0; n < 1024; n++) {
      turns.admit(`https://${n}.example`, 0);
      turns.done(`https://${n}.example`);
    }
    expect(turns.origins).toBe(1024);
    turns.admit(B, 120_000);
    expect(turns.origins).toBe(1);
    expect(() => turns.done(A)).toThrow('done with a claim that was not let in');
  });
});
