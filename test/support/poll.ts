/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads `read` every `stepMs` until `done` holds of what it read, at most `timeoutMs`; returns the last value read,
 * whether `done` held or the time ran out (for a caller that asserts on it, and so is told what it was).
 */
export async function pollValue<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
  stepMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(stepMs);
  }
}

/** The first value `probe` gives other than undefined, polled at most `timeoutMs`; throws naming `what` otherwise. */
export async function pollFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 15_000,
  stepMs = 50,
): Promise<T> {
  const value = await pollValue(probe, (found) => found !== undefined, timeoutMs, stepMs);
  if (value === undefined) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
  return value;
}

/** Polls until `check` holds, at most `timeoutMs`; throws naming `what` otherwise. */
export async function pollUntil(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
  stepMs = 50,
): Promise<void> {
  await pollFor(what, async () => ((await check()) ? true : undefined), timeoutMs, stepMs);
}
