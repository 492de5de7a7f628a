/** A counting semaphore: at most `size` holders; the others wait in arrival order. */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands the slot to the first waiter, if any (it stays taken), or frees it. */
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/**
 * `size` slots for each key (a receiver's origin), taken and given back like Slots. A key's slots are dropped
 * once nobody holds or waits for them, so only the keys in use are kept.
 */
export class KeyedSlots {
  private readonly byKey = new Map<string, { slots: Slots; users: number }>();

  constructor(private readonly size: number) {}

  acquire(key: string): Promise<void> {
    let entry = this.byKey.get(key);
    if (!entry) {
      entry = { slots: new Slots(this.size), users: 0 };
      this.byKey.set(key, entry);
    }
    entry.users++;
    return entry.slots.acquire();
  }

  release(key: string): void {
    const entry = this.byKey.get(key);
    if (!entry) throw new Error('released a slot that was not taken');
    entry.slots.release();
    if (--entry.users === 0) this.byKey.delete(key);
  }

  /** Keys with a holder or a waiter. */
  get keys(): number {
    return this.byKey.size;
  }
}
