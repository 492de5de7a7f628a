/**
 * Keeps a failure that repeats from flooding the log: the first occurrence of a key is logged at once, the next
 * ones within `windowMs` are counted, and the first one after the window is logged with that count. A Redis
 * outage makes every queue's connection and worker report each reconnect attempt (several a second each); with
 * this the log says it once per queue and then about twice a minute, with how many were left out.
 */
export class RepeatThrottle {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly windowMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Calls `log` with the fields to add to the line (`suppressed`: the occurrences left out since the last logged
   * one, when there were any), unless this occurrence is left out.
   */
  report(key: string, log: (fields: { suppressed?: number }) => void): void {
    const now = this.now();
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.windowMs) {
      seen.suppressed++;
      return;
    }
    this.last.set(key, { at: now, suppressed: 0 });
    log(seen?.suppressed ? { suppressed: seen.suppressed } : {});
  }
}
