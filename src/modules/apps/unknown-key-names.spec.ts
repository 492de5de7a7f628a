import { UnknownKeyNames } from './unknown-key-names.js';

describe('UnknownKeyNames', () => {
  it('keeps 10,000 names at most, letting the oldest go first', () => {
    const names = new UnknownKeyNames(60_000);
    for (let i = 0; i <= 10_000; i++) names.remember(`name ${i}`);
    expect(names.has('name 0')).toBe(false);
    expect(names.has('name 1')).toBe(true);
    expect(names.has('name 10000')).toBe(true);
    // A name remembered again moves to the back: the next to go is the oldest of the others.
    names.remember('name 1');
    names.remember('one more');
    expect(names.has('name 1')).toBe(true);
    expect(names.has('name 2')).toBe(false);
  });

  it('forgets a name on request', () => {
    const names = new UnknownKeyNames(60_000);
    names.remember('a');
    names.forget('a');
    expect(names.has('a')).toBe(false);
  });

  it('keeps a name for the time to live from the start of its lookup, not from its answer', () => {
    const names = new UnknownKeyNames(60_000);
    names.remember('slow', Date.now() - 59_000);
    expect(names.has('slow')).toBe(true);
    names.remember('too slow', Date.now() - 60_000);
    expect(names.has('too slow')).toBe(false);
  });

  it('remembers nothing with AUTH_CACHE_MS=0', () => {
    const names = new UnknownKeyNames(0);
    names.remember('a');
    expect(names.has('a')).toBe(false);
  });
});
