import { tryAgain } from './try-again.js';

describe('tryAgain', () => {
  it('runs again after each delay until the work succeeds, and answers its value', async () => {
    let runs = 0;
    const seen: [number, number][] = [];
    const value = await tryAgain(
      async () => {
        runs += 1;
        if (runs < 3) throw new Error(`failure ${runs}`);
        return 'done';
      },
      [1, 2, 3],
      (_error, attempt, delay) => {
        seen.push([attempt, delay]);
        return true;
      },
    );
    expect([value, runs, seen]).toStrictEqual([
      'done',
      3,
      [
        [1, 1],
        [2, 2],
      ],
    ]);
  });

  it('throws the last failure as is once the delays are spent', async () => {
    let runs = 0;
    const failure = tryAgain(async () => {
      runs += 1;
      throw new Error(`failure ${runs}`);
    }, [1, 1]);
    await expect(failure).rejects.toThrow('failure 3');
    expect(runs).toBe(3);
  });

  it('throws at once a failure that `again` does not retry', async () => {
    let runs = 0;
    const failure = tryAgain(
      async () => {
        runs += 1;
        throw new TypeError('not this one');
      },
      [1, 1],
      (error) => !(error instanceof TypeError),
    );
    await expect(failure).rejects.toThrow('not this one');
    expect(runs).toBe(1);
  });
});
