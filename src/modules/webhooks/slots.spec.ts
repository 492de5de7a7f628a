import { Slots } from './slots.js';

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
