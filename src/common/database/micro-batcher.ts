/** One item's outcome of a batch call: its value, or the error that answers only that item. */
export type Settled<O> = { value: O } | { error: unknown };

export interface MicroBatcherOptions<I, O> {
  /** Items per call at most. */
  readonly max: number;
  /** Calls in flight at most. */
  readonly concurrency: number;
  /** One call for the items, answering each in order; a throw answers every item of the call with it. */
  readonly run: (items: I[]) => Promise<Settled<O>[]>;
  /**
   * What an item touches (account ids, say). Items sharing a key never go to calls in flight at the same time:
   * they wait and go together in the next call, where they are applied in order, instead of one call waiting on
   * another's row locks. Without it, any waiting item may join any new call.
   */
  readonly keysOf?: (item: I) => readonly string[];
  /** Told the size of every call started (a metric). */
  readonly onCall?: (size: number) => void;
  /**
   * Start a call on the next turn of the event loop rather than at once, so that the items submitted in the
   * same turn (a queue worker taking several jobs) go together even at idle.
   */
  readonly gather?: boolean;
  /**
   * A call beyond the first starts only when at least this many items wait (default 1): under load a second call
   * overlaps the first's commit while each stays large.
   */
  readonly extraCallMin?: number;
}

interface Pending<I, O> {
  item: I;
  keys: readonly string[];
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Micro-batching (group commit for writes, one query for many reads): an item goes to the database at once when
 * fewer than `concurrency` calls are in flight, so an idle service answers after one call with no waiting;
 * otherwise it waits, and the next free call takes the waiting items, up to `max`, in arrival order. Each item is
 * answered only when its call has finished (for a write: committed). Nothing is timed: the batch is whatever
 * arrived while the previous call was at the database.
 */
export class MicroBatcher<I, O> {
  private waiting: Pending<I, O>[] = [];
  private inFlight = 0;
  private inFlightItems = 0;
  /** Keys of the items at the database, with how many calls hold each. */
  private readonly busy = new Map<string, number>();
  private scheduled = false;

  constructor(private readonly options: MicroBatcherOptions<I, O>) {}

  /** Items queued, and calls and items at the database. */
  load(): { waiting: number; calls: number; items: number } {
    return { waiting: this.waiting.length, calls: this.inFlight, items: this.inFlightItems };
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, keys: this.options.keysOf?.(item) ?? [], resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    if (!this.options.gather) return this.dispatchNow();
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.dispatchNow();
    });
  }

  private dispatchNow(): void {
    while (this.inFlight < this.options.concurrency && this.waiting.length > 0) {
      if (this.inFlight > 0 && this.waiting.length < (this.options.extraCallMin ?? 1)) return;
      const batch = this.take();
      if (batch.length === 0) return; // everything waiting conflicts with a call in flight
      this.start(batch);
    }
  }

  /** The waiting items free of the keys in flight, oldest first, up to `max`; the others keep their places. */
  private take(): Pending<I, O>[] {
    const { max } = this.options;
    if (this.busy.size === 0 && this.waiting.length <= max) {
      const all = this.waiting;
      this.waiting = [];
      return all;
    }
    const batch: Pending<I, O>[] = [];
    const rest: Pending<I, O>[] = [];
    for (const pending of this.waiting) {
      if (batch.length < max && !pending.keys.some((key) => this.busy.has(key))) batch.push(pending);
      else rest.push(pending);
    }
    this.waiting = rest;
    return batch;
  }

  private start(batch: Pending<I, O>[]): void {
    const keys = new Set(batch.flatMap((pending) => pending.keys));
    for (const key of keys) this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
    this.inFlight++;
    this.inFlightItems += batch.length;
    this.options.onCall?.(batch.length);
    void this.run(batch).finally(() => {
      for (const key of keys) {
        const held = this.busy.get(key)! - 1;
        if (held === 0) this.busy.delete(key);
        else this.busy.set(key, held);
      }
      this.inFlight--;
      this.inFlightItems -= batch.length;
      this.dispatch();
    });
  }

  private async run(batch: Pending<I, O>[]): Promise<void> {
    try {
      const results = await this.options.run(batch.map((pending) => pending.item));
      if (results.length !== batch.length) {
        throw new Error(`a batch call answered ${results.length} of ${batch.length} items`);
      }
      results.forEach((result, n) => {
        if ('error' in result) batch[n].reject(result.error);
        else batch[n].resolve(result.value);
      });
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    }
  }
}
