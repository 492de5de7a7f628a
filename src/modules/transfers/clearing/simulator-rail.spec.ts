import { Backoffs } from 'bullmq';
import { CLEARING_JOB_OPTIONS } from './simulator-rail.js';

/** The waits BullMQ puts between the attempts of a clearing job (its own computation, jitter included). */
function waits(): number[] {
  const { attempts, backoff } = CLEARING_JOB_OPTIONS;
  return Array.from(
    { length: attempts - 1 },
    (_, made) =>
      Backoffs.calculate(backoff, made + 1, new Error('database down'), undefined as never) as number,
  );
}

describe('the clearing jobs retry policy', () => {
  it('keeps a present or settle job trying through a database outage of a minute, whatever the jitter draws', () => {
    // 100 draws of the jitter: the least total must still outlast the outage.
    for (let draw = 0; draw < 100; draw++) {
      const schedule = waits();
      expect(schedule.reduce((sum, wait) => sum + wait, 0)).toBeGreaterThanOrEqual(60_000);
    }
  });

  it('tries again quickly at first (a blip costs a second) and never waits more than about a minute', () => {
    for (let draw = 0; draw < 100; draw++) {
      const schedule = waits();
      expect(schedule[0]).toBeLessThanOrEqual(1_000);
      expect(Math.max(...schedule)).toBeLessThanOrEqual(64_000);
    }
  });
});
