import { handOver } from './hand-over.js';

/** A log that keeps what it was told. */
function sink() {
  const lines: { fields: Record<string, unknown>; message: string }[] = [];
  return {
    lines,
    warn: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }),
  };
}

describe('handOver', () => {
  it('waits for a hand-over that ends in time, and logs nothing', async () => {
    const log = sink();
    let ran = false;
    const work = async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      ran = true;
    };
    expect(await handOver(work, log, 'a job', { id: 'x' }, 1_000)).toBe(true);
    expect(ran).toBe(true);
    expect(log.lines).toEqual([]);
  });

  it('answers false and logs the error of a failed hand-over, with its ids, without throwing', async () => {
    const log = sink();
    const work = () => Promise.reject(new Error('queue closed'));
    expect(await handOver(work, log, 'a job', { id: 'x' }, 1_000)).toBe(false);
    expect(log.lines).toEqual([
      {
        fields: { id: 'x', err: new Error('queue closed') },
        message: 'a job could not be handed over; its recovery sweep will',
      },
    ]);
  });

  it('stops waiting at the deadline; a hand-over that fails later is no unhandled rejection', async () => {
    const log = sink();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      // The hand-over ends only when the test fails it, after handOver has answered: it cannot have waited for it.
      let fail: (error: Error) => void = () => undefined;
      const work = () => new Promise((_, reject) => (fail = reject));
      const started = Date.now();
      expect(await handOver(work, log, 'a job', { id: 'x' }, 20)).toBe(false);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(log.lines).toEqual([
        {
          fields: { id: 'x', timeoutMs: 20 },
          message: 'a job not handed over within 20 ms; its recovery sweep will',
        },
      ]);
      fail(new Error('late failure'));
      // Unhandled rejections are reported after the microtask queue drains: a macrotask later, it would be there.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
