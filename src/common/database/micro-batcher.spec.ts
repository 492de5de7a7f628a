import { MicroBatcher, type Settled } from './micro-batcher.js';

/** A run function whose calls stay open until the test lets them finish. */
function gatedRun() {
  const calls: { items: string[]; finish: () => void }[] = [];
  const run = (items: string[]) =>
    new Promise<Settled<string>[]>((resolve) => {
      calls.push({
        items,
        finish: () =>
          resolve(
            items.map((item) =>
              item.startsWith('bad') ? { error: new Error(item) } : { value: `${item}!` },
            ),
          ),
      });
    });
  return { calls, run };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('MicroBatcher', () => {
  it('sends an item at once when idle, and groups those that arrive while a call is in flight', async () => {
    const { calls, run } = gatedRun();
    const batcher = new MicroBatcher<string, string>({ max: 3, concurrency: 1, run });
    const first = batcher.submit('a');
    expect(calls.map((call) => call.items)).toEqual([['a']]);
    const rest = ['b', 'c', 'd', 'e'].map((item) => batcher.submit(item));
    expect(batcher.load()).toEqual({ waiting: 4, calls: 1, items: 1 });
    calls[0].finish();
    expect(await first).toBe('a!');
    await flush();
    expect(calls.map((call) => call.items)).toEqual([['a'], ['b', 'c', 'd']]);
    calls[1].finish();
    await flush();
    expect(calls[2].items).toEqual(['e']);
    calls[2].finish();
    expect(await Promise.all(rest)).toEqual(['b!', 'c!', 'd!', 'e!']);
    expect(batcher.load()).toEqual({ waiting: 0, calls: 0, items: 0 });
  });

  it('answers a refused item alone, and every item of a call that throws', async () => {
    const { calls, run } = gatedRun();
    const batcher = new MicroBatcher<string, string>({ max: 10, concurrency: 1, run });
    void batcher.submit('x');
    const good = batcher.submit('ok');
    const bad = batcher.submit('bad-1');
    calls[0].finish();
    await flush();
    calls[1].finish();
    expect(await good).toBe('ok!');
    await expect(bad).rejects.toThrow('bad-1');

    const failing = new MicroBatcher<string, string>({
      max: 10,
      concurrency: 1,
      run: () => Promise.reject(new Error('connection lost')),
    });
    const both = [failing.submit('p'), failing.submit('q')];
    for (const answer of both) await expect(answer).rejects.toThrow('connection lost');
  });

  it('never puts items that share a key into concurrent calls', async () => {
    const { calls, run } = gatedRun();
    const batcher = new MicroBatcher<string, string>({
      max: 10,
      concurrency: 2,
      run,
      keysOf: (item) => item.split('-'),
    });
    const answers = ['A-B', 'B-C', 'D-E', 'C-A', 'F-G'].map((item) => batcher.submit(item));
    // A-B goes at once; B-C shares B with it and waits; D-E is free and takes the second call; C-A waits for
    // A, behind B-C; F-G arrives with both calls busy.
    expect(calls.map((call) => call.items)).toEqual([['A-B'], ['D-E']]);
    expect(batcher.load().waiting).toBe(3);
    calls[1].finish();
    await flush();
    expect(calls[2].items).toEqual(['F-G']);
    calls[0].finish();
    await flush();
    expect(calls[3].items).toEqual(['B-C', 'C-A']);
    calls[2].finish();
    calls[3].finish();
    expect(await Promise.all(answers)).toEqual(['A-B!', 'B-C!', 'D-E!', 'C-A!', 'F-G!']);
  });

  it('with extraCallMin, starts a call beyond the first only once that many items wait', async () => {
    const { calls, run } = gatedRun();
    const batcher = new MicroBatcher<string, string>({ max: 10, concurrency: 2, extraCallMin: 3, run });
    const answers = [batcher.submit('a'), batcher.submit('b'), batcher.submit('c')];
    // 'a' goes at once (idle); 'b' and 'c' wait: two items, fewer than three.
    expect(calls.map((call) => call.items)).toEqual([['a']]);
    answers.push(batcher.submit('d'));
    // Three wait: the second call takes them while the first is in flight.
    expect(calls.map((call) => call.items)).toEqual([['a'], ['b', 'c', 'd']]);
    answers.push(batcher.submit('e'));
    calls[0].finish();
    await flush();
    // One call in flight and one item waiting, fewer than three: 'e' waits until no call is in flight, then
    // goes alone.
    expect(calls).toHaveLength(2);
    calls[1].finish();
    await flush();
    expect(calls.map((call) => call.items)).toEqual([['a'], ['b', 'c', 'd'], ['e']]);
    calls[2].finish();
    expect(await Promise.all(answers)).toEqual(['a!', 'b!', 'c!', 'd!', 'e!']);
  });

  it('refuses an answer of the wrong length for every item', async () => {
    const batcher = new MicroBatcher<string, string>({
      max: 10,
      concurrency: 1,
      run: () => Promise.resolve([]),
    });
    await expect(batcher.submit('a')).rejects.toThrow(/answered 0 of 1/);
  });

  it('with gather, groups the items of one event-loop turn even at idle; a run that throws at once rejects them', async () => {
    const { calls, run } = gatedRun();
    const batcher = new MicroBatcher<string, string>({ max: 10, concurrency: 1, run, gather: true });
    const answers = ['a', 'b', 'c'].map((item) => batcher.submit(item));
    expect(calls).toHaveLength(0);
    await flush();
    expect(calls.map((call) => call.items)).toEqual([['a', 'b', 'c']]);
    calls[0].finish();
    expect(await Promise.all(answers)).toEqual(['a!', 'b!', 'c!']);

    const throwing = new MicroBatcher<string, string>({
      max: 10,
      concurrency: 1,
      gather: true,
      run: () => {
        throw new Error('no connection');
      },
    });
    await expect(throwing.submit('x')).rejects.toThrow('no connection');
  });
});
