import { MicroBatcher } from './micro-batcher.js';

/** A flush that records its batches and answers when released. */
function controlledFlush() {
  const batches: number[][] = [];
  const releases: (() => void)[] = [];
  const flush = (items: number[]) => {
    batches.push(items);
    return new Promise<string[]>((resolve) => releases.push(() => resolve(items.map((n) => `r${n}`))));
  };
  return { batches, releases, flush };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('MicroBatcher', () => {
  it('sends an item submitted at idle alone, on the next turn', async () => {
    const { batches, releases, flush } = controlledFlush();
    const batcher = new MicroBatcher(flush, { maxBatch: 10, maxInFlight: 1 });
    const result = batcher.submit(1);
    await turn();
    expect(batches).toEqual([[1]]);
    releases[0]();
    await expect(result).resolves.toBe('r1');
  });

  it('groups what arrives while flushes run, answers each item with its own result, in order', async () => {
    const { batches, releases, flush } = controlledFlush();
    const batcher = new MicroBatcher(flush, { maxBatch: 10, maxInFlight: 1 });
    const first = batcher.submit(1);
    await turn();
    const waiting = [2, 3, 4].map((n) => batcher.submit(n));
    await turn();
    expect(batches).toEqual([[1]]); // one flush at a time: the others wait
    expect(batcher.pending).toBe(4);
    releases[0]();
    await expect(first).resolves.toBe('r1');
    await turn();
    expect(batches).toEqual([[1], [2, 3, 4]]);
    releases[1]();
    await expect(Promise.all(waiting)).resolves.toEqual(['r2', 'r3', 'r4']);
    expect(batcher.pending).toBe(0);
  });

  it('keeps batches within maxBatch and runs up to maxInFlight flushes at once', async () => {
    const { batches, releases, flush } = controlledFlush();
    const batcher = new MicroBatcher(flush, { maxBatch: 2, maxInFlight: 2 });
    const results = [1, 2, 3, 4, 5].map((n) => batcher.submit(n));
    await turn();
    expect(batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    releases[0]();
    await turn();
    await turn();
    expect(batches).toEqual([[1, 2], [3, 4], [5]]);
    releases[1]();
    releases[2]();
    await expect(Promise.all(results)).resolves.toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
  });

  it('rejects every item of a batch whose flush fails, and goes on with the next ones', async () => {
    let calls = 0;
    const batcher = new MicroBatcher(
      (items: number[]) => {
        calls++;
        if (calls === 1) throw new Error('database gone');
        return Promise.resolve(items.map((n) => n * 10));
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    const failed = [batcher.submit(1), batcher.submit(2)];
    for (const result of failed) await expect(result).rejects.toThrow('database gone');
    await expect(batcher.submit(3)).resolves.toBe(30);
  });
});
