/** What a piece of work came to by its deadline: its value, its error, or still running. */
export type Within<T> = { value: T } | { error: Error } | { lateAfterMs: number };

/**
 * Runs `work` and waits for it at most `timeoutMs`. Work still running at the deadline goes on (nothing can stop
 * a promise); its later failure is handled here, never an unhandled rejection. The timer never outlives the call,
 * so nothing is left to hold a process open.
 */
export async function within<T>(timeoutMs: number, work: () => Promise<T>): Promise<Within<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ lateAfterMs: number }>((resolve) => {
    timer = setTimeout(() => resolve({ lateAfterMs: timeoutMs }), timeoutMs);
  });
  try {
    // race() subscribes to the work too: a rejection after the deadline is handled.
    return await Promise.race([
      Promise.resolve()
        .then(work)
        .then((value) => ({ value })),
      late,
    ]);
  } catch (error) {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  } finally {
    clearTimeout(timer);
  }
}
