/** How many names are kept at most: about 1 MB of short strings. */
const CAPACITY = 10_000;

/**
 * Names that a lookup found naming no active key (an application that does not exist or is disabled; a key id
 * that its application never had, or revoked), each kept for `ttlMs` from the start of that lookup, so that repeating one
 * costs no query. A name is never kept longer because it is asked again: a key added behind this process's back
 * is found at the first lookup after `ttlMs`. At most CAPACITY names; the oldest goes first. Kept apart from the
 * tokens that verified (VerifiedTokenCache), so a flood of names cannot push those out.
 */
export class UnknownKeyNames {
  private readonly until = new Map<string, number>();

  constructor(private readonly ttlMs: number) {}

  has(name: string): boolean {
    const until = this.until.get(name);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.until.delete(name);
    return false;
  }

  /**
   * `lookedUpAt`: when the lookup that found nothing started. The name is kept for `ttlMs` from then, not from its
   * answer: a key committed while a slow lookup ran is found within `ttlMs` of its commit (or once that lookup has
   * answered, should it take longer).
   */
  remember(name: string, lookedUpAt = Date.now()): void {
    const until = lookedUpAt + this.ttlMs;
    if (until <= Date.now()) return;
    this.until.delete(name); // to the back: the map's order stays about the order in which names expire
    if (this.until.size >= CAPACITY) this.until.delete(this.until.keys().next().value as string);
    this.until.set(name, until);
  }

  forget(name: string): void {
    this.until.delete(name);
  }
}
