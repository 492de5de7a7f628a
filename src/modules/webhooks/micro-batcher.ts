export interface MicroBatcherOptions {
  /** At most this many items per flush. */
  maxBatch: number;
  /** At most this many flushes at once; items that arrive meanwhile wait for the next one. */
  maxInFlight: number;
}

interface Waiting<I, O> {
  item: I;
  resolve: (result: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Groups single requests into batches without a timer: an item submitted while no flush is running goes
 * out on the next turn of the event loop (alone at idle, so no added latency); items submitted while
 * `maxInFlight` flushes run wait and go out together as soon as one of them returns (under load, the
 * batch grows with the round-trip time, as a database's group commit does). `flush` answers one result
 * per item, in order; if it throws, every item of that batch is rejected with the error.
 */
export class MicroBatcher<I, O> {
  private waiting: Waiting<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly flush: (items: I[]) => Promise<O[]>,
    private readonly options: MicroBatcherOptions,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Items waiting or being flushed. */
  get pending(): number {
    return this.waiting.length + this.inFlight;
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.waiting.length === 0) return;
    this.scheduled = true;
    // setImmediate, not a microtask: the jobs started in this turn (a worker fetching several) join.
    setImmediate(() => {
      this.scheduled = false;
      this.run();
    });
  }

  private run(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.options.maxBatch);
      this.inFlight++;
      let flushed: Promise<O[]>;
      try {
        flushed = this.flush(batch.map((waiting) => waiting.item));
      } catch (error) {
        flushed = Promise.reject(error);
      }
      flushed
        .then(
          (results) => {
            for (const [n, waiting] of batch.entries()) waiting.resolve(results[n]);
          },
          (error: unknown) => {
            for (const waiting of batch) waiting.reject(error);
          },
        )
        .finally(() => {
          this.inFlight--;
          this.schedule();
        });
    }
  }
}
