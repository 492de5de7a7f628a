/** How OriginTurns paces the claims of one receiver's origin (WebhookDeliveryService's DeliveryLimits). */
export interface OriginTurnLimits {
  /** POSTs in flight to one origin at once. */
  readonly postsPerOrigin: number;
  /** Claims that may wait for an origin's POST slots whatever its pace. */
  readonly waitingPerOrigin: number;
  /** Beyond those, a claim waits only if the origin's pace gives it its slot within this. */
  readonly shortWaitMs: number;
  /** The latest a claim given back is due. */
  readonly laterMaxMs: number;
}

/** What the process knows of one origin. */
interface Origin {
  /** Claims let in (waiting for a POST slot, or POSTing) and not yet done. */
  held: number;
  /** performance.now() at which each POST in flight started. */
  posting: number[];
  /** Exponential mean of the durations of the origin's finished POSTs. */
  meanMs?: number;
  /** performance.now() when one of its POSTs last finished. */
  finishedAt: number;
  /** The turn the next claim given back gets (performance.now()). */
  nextTurnAt: number;
}

/** A mean older than this says nothing of the origin now. */
const RECENT_MS = 60_000;
/** Weight of the latest POST in the mean (about the last ten count). */
const MEAN_WEIGHT = 0.1;
/** Origins kept while idle (for their pace) before the idle ones are dropped. */
const KEPT_ORIGINS = 1024;

/**
 * Which claims of one receiver's origin a worker process keeps waiting for the origin's POST slots, and when the
 * others are due again (docs/decisions/0079-webhook-fairness-between-receivers.md). Every claim waiting holds one
 * of the process's shared delivery slots: a receiver that hangs must not hold them all with its backlog.
 *
 * A claim is let in when fewer than `postsPerOrigin + waitingPerOrigin` claims are held for its origin, or when
 * the origin's pace gives it its POST slot within `shortWaitMs` (a receiver that answers fast takes a large batch
 * at once). The pace is the mean time of the origin's recent POSTs, or the age of its oldest POST in flight once
 * that is past the short wait: a receiver that stops answering shows within it. An origin with no recent POST finished has no pace yet,
 * and only the first claims are let in. Any other claim is given back, due at the turn the pace gives it behind
 * the claims held and those given back before it (each takes `pace / postsPerOrigin` of the origin's time), at
 * least `shortWaitMs` and at most `laterMaxMs` from now, with ±10 % jitter: a large backlog is spread over the
 * time the receiver needs for it instead of being claimed and given back in a tight loop.
 */
export class OriginTurns {
  private readonly byOrigin = new Map<string, Origin>();

  constructor(private readonly limits: OriginTurnLimits) {}

  /**
   * A claim for `origin`: undefined when it may wait for its POST slot (then `done` once it has POSTed or is
   * given back), or the delay in milliseconds after which it is due again.
   */
  admit(origin: string, now: number): number | undefined {
    const { postsPerOrigin, waitingPerOrigin, shortWaitMs, laterMaxMs } = this.limits;
    const entry = this.entry(origin, now);
    const paceMs = this.paceMs(entry, now);
    const waitMs = Math.floor(entry.held / postsPerOrigin) * paceMs;
    const paced = entry.meanMs !== undefined && now - entry.finishedAt <= RECENT_MS;
    if (entry.held < postsPerOrigin + waitingPerOrigin || (paced && waitMs <= shortWaitMs)) {
      entry.held++;
      return undefined;
    }
    const turnAt = Math.min(Math.max(now + waitMs, entry.nextTurnAt), now + laterMaxMs);
    entry.nextTurnAt = Math.min(turnAt + paceMs / postsPerOrigin, now + laterMaxMs);
    const delayMs = Math.min(Math.max(turnAt - now, shortWaitMs), laterMaxMs);
    return Math.round(delayMs * (0.9 + Math.random() * 0.2));
  }

  /**
   * The origin's POST time: the mean of its recent ones, or the age of its oldest POST in flight once that is
   * older than the short wait (a receiver that stopped answering). A younger one says nothing yet: a long task or
   * a garbage collection in this process makes every POST in flight a little older at once.
   */
  private paceMs(entry: Origin, now: number): number {
    const oldestMs = entry.posting.length > 0 ? now - Math.min(...entry.posting) : 0;
    return Math.max(entry.meanMs ?? 0, oldestMs > this.limits.shortWaitMs ? oldestMs : 0);
  }

  /** A claim let in by `admit` has POSTed or was given back. */
  done(origin: string): void {
    const entry = this.byOrigin.get(origin);
    if (!entry || entry.held === 0) throw new Error('done with a claim that was not let in');
    entry.held--;
  }

  /** A POST to `origin` starts now: the value to give `posted`. */
  posting(origin: string, now: number): number {
    this.entry(origin, now).posting.push(now);
    return now;
  }

  /** The POST that started at `startedAt` ended now. */
  posted(origin: string, startedAt: number, now: number): void {
    const entry = this.entry(origin, now);
    const at = entry.posting.indexOf(startedAt);
    if (at >= 0) entry.posting.splice(at, 1);
    const durationMs = now - startedAt;
    entry.meanMs =
      entry.meanMs === undefined ? durationMs : entry.meanMs + MEAN_WEIGHT * (durationMs - entry.meanMs);
    entry.finishedAt = now;
  }

  /** Origins known (in use, or idle with a recent pace or turns ahead). */
  get origins(): number {
    return this.byOrigin.size;
  }

  private entry(origin: string, now: number): Origin {
    let entry = this.byOrigin.get(origin);
    if (entry) return entry;
    if (this.byOrigin.size >= KEPT_ORIGINS) this.dropIdle(now);
    entry = { held: 0, posting: [], finishedAt: Number.NEGATIVE_INFINITY, nextTurnAt: now };
    this.byOrigin.set(origin, entry);
    return entry;
  }

  /** Forgets the origins with nothing held or in flight, no recent pace and no turn ahead. */
  private dropIdle(now: number): void {
    for (const [origin, entry] of this.byOrigin) {
      const idle = entry.held === 0 && entry.posting.length === 0 && entry.nextTurnAt <= now;
      if (idle && now - entry.finishedAt > RECENT_MS) this.byOrigin.delete(origin);
    }
  }
}
