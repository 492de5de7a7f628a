import { randomUUID } from 'node:crypto';

/**
 * Time-ordered uuids (version 7, RFC 9562), laid out as PostgreSQL 18's uuidv7() lays them out: 48 bits of Unix
 * time in milliseconds, the version, 12 bits that order the ids of one millisecond, the variant, 62 random bits.
 * The ids one generator makes only grow: within a millisecond the 12 bits count up (from 0), past 4,096 ids the
 * next millisecond is borrowed, and a clock that steps back is not followed until it catches up. Ids of another
 * process (or of PostgreSQL) are ordered by their millisecond only, as ids of two backends are (decision 0042).
 */
export class UuidV7Generator {
  private lastMs = 0;
  private sequence = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  next(): string {
    const now = this.clock();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.sequence = 0;
    } else if (++this.sequence > 0xfff) {
      this.lastMs += 1;
      this.sequence = 0;
    }
    // randomUUID's variant and random bits (xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx from its 19th character on),
    // drawn from node's batched entropy: cheaper than drawing eight bytes here.
    const time = this.lastMs.toString(16).padStart(12, '0');
    const sequence = this.sequence.toString(16).padStart(3, '0');
    return `${time.slice(0, 8)}-${time.slice(8)}-7${sequence}${randomUUID().slice(18)}`;
  }
}

const generator = new UuidV7Generator();

/** A new time-ordered uuid (version 7) from the process's one generator: each greater than the last. */
export function uuidv7(): string {
  return generator.next();
}
