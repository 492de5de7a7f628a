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
