import { within } from '../async/within.js';

/**
 * How long a request waits for the hand-over that follows its committed change (docs/decisions/0038).
 * A queue that answers takes a job in about a millisecond; one that is down (Redis stopped, its connection
 * retrying) would hold the request until it is back.
 */
export const HAND_OVER_TIMEOUT_MS = 1_000;

/** Where a hand-over that failed or was late is reported (a service's PinoLogger). */
interface HandOverLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * Hands a committed change over to asynchronous processing (a queue job, a rail's or a provider's submit) and
 * waits for it at most `timeoutMs`. It never throws: the change is committed and its answer is due. A hand-over
 * that fails or is late is logged (`what`, with `fields`: ids only), and the change's recovery sweep hands it
 * over again; one that is only late still runs (a queue that comes back takes the job, and the job's id makes
 * the sweep's copy a no-op). Resolves to whether the hand-over ended in time.
 */
export async function handOver(
  work: () => Promise<unknown>,
  log: HandOverLog,
  what: string,
  fields: Record<string, unknown>,
  timeoutMs = HAND_OVER_TIMEOUT_MS,
): Promise<boolean> {
  const outcome = await within(timeoutMs, work);
  if ('value' in outcome) return true;
  if ('error' in outcome) {
    log.warn({ ...fields, err: outcome.error }, `${what} could not be handed over; its recovery sweep will`);
  } else {
    log.warn(
      { ...fields, timeoutMs },
      `${what} not handed over within ${timeoutMs} ms; its recovery sweep will`,
    );
  }
  return false;
}
