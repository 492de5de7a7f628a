/**
 * Runs `run` until it succeeds. After a failure it waits the next of `delaysMs` and runs it again, while `again`
 * (given the failure, the number of the try that failed and the wait to come) says so; `again` is also where a
 * caller logs the failure it retries. Once the delays are spent, or `again` says no, the failure is thrown as is.
 */
export async function tryAgain<T>(
  run: () => Promise<T>,
  delaysMs: readonly number[],
  again: (error: unknown, attempt: number, delayMs: number) => boolean = () => true,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      const delay = delaysMs[attempt];
      if (delay === undefined || !again(error, attempt + 1, delay)) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
