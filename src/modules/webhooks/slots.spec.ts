import { KeyedSlots, Slots } from './slots.js';

describe('Slots', () => {
  it('lets `size` holders in at once and the others in arrival order as slots are released', async () => {
    const slots = new Slots(2);
    const entered: number[] = [];
    const holders = [1, 2, 3, 4].map((n) => slots.acquire().then(() => entered.push(n)));
    await Promise.resolve();
    await Promise.resolve();
    expect(entered).toEqual([1, 2]);

    slots.release();
    await holders[2];
    expect(entered).toEqual([1, 2, 3]);

    slots.release();
    await holders[3];
    expect(entered).toEqual([1, 2, 3, 4]);

    // Every holder gone: both slots free again, taken without waiting.
    slots.release();
    slots.release();
    let both = false;
    void Promise.all([slots.acquire(), slots.acquire()]).then(() => (both = true));
    await Promise.resolve();
    await Promise.resolve();
    expect(both).toBe(true);
  });
});

describe('KeyedSlots', () => {
  it('gives each key its own `size` slots, and forgets a key nobody holds or waits for', async () => {
    const slots = new KeyedSlots(1);
    const entered: string[] = [];
    const take = (key: string, name: string) => slots.acquire(key).then(() => entered.push(name));
    const a1 = take('a', 'a1');
    const a2 = take('a', 'a2');
    const b1 = take('b', 'b1');
    await Promise.all([a1, b1]);
    await Promise.resolve();
    // a2 waits for a's one slot; b was not held up by it.
    expect(entered).toEqual(['a1', 'b1']);
    expect(slots.keys).toBe(2);

    slots.release('b');
    expect(slots.keys).toBe(1);
    slots.release('a');
    await a2;
    expect(entered).toEqual(['a1', 'b1', 'a2']);
    slots.release('a');
    expect(slots.keys).toBe(0);
    expect(() => slots.release('a')).toThrow('released a slot that was not taken');
  });
});
