import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import {
  MemoryStore,
  type ClientRateLimitInfo,
  type IncrementResponse,
  type Options,
  type Store,
} from 'express-rate-limit';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { PinoLogger } from '../logging/pino-logger.js';
import { RepeatThrottle } from '../logging/repeat-throttle.js';
import { PG_POOL } from '../database/pg-pool.js';
import { QUEUE_CONNECTION, type QueueConnection } from '../queue/queue.factory.js';

/**
 * A hit `take` counted: express-rate-limit's count and window end, and the window it counts in, for `giveBack` to
 * name (decision 0094). Opaque to the caller.
 */
export interface TakenHit extends IncrementResponse {
  readonly window: string;
}

/**
 * A store whose hits can be given back to the window they were taken in: `giveBack(key, window)` decrements only
 * while that window lasts, never the window after it (express-rate-limit's `decrement(key)` names no window).
 */
export interface WindowedStore extends Store {
  take(key: string): Promise<TakenHit>;
  giveBack(key: string, window: string): Promise<void>;
}

/** How often a process deletes the PostgreSQL counters whose window ended (any process may; all are safe). */
const PRUNE_EVERY_MS = 60_000;

/**
 * Fixed-window counters in PostgreSQL: one row per key in the UNLOGGED table `rate_limit_counters`, counted
 * by one atomic upsert (a window that ended starts again at 1), so every process that shares the database
 * counts together. UNLOGGED: a crash empties the counters, which only forgives a minute of requests.
 */
export class PostgresRateLimitStore implements WindowedStore {
  readonly localKeys = false;
  private windowMs = 60_000;

  constructor(
    private readonly pool: pg.Pool,
    readonly prefix: string,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  increment(key: string): Promise<IncrementResponse> {
    return this.take(key);
  }

  /** The window is its `reset_at` in microseconds (a Date drops them): exact, and a new window has another. */
  async take(key: string): Promise<TakenHit> {
    const { rows } = await this.pool.query<{ hits: number; reset_at: Date; window: string }>(
      `INSERT INTO rate_limit_counters AS c (key, hits, reset_at)
       VALUES ($1, 1, clock_timestamp() + $2 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE SET
         hits = CASE WHEN c.reset_at <= clock_timestamp() THEN 1 ELSE c.hits + 1 END,
         reset_at = CASE WHEN c.reset_at <= clock_timestamp() THEN EXCLUDED.reset_at ELSE c.reset_at END
       RETURNING hits, reset_at, (extract(epoch FROM reset_at) * 1000000)::bigint::text AS window`,
      [this.prefix + key, this.windowMs],
    );
    return { totalHits: rows[0].hits, resetTime: rows[0].reset_at, window: rows[0].window };
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    const { rows } = await this.pool.query<{ hits: number; reset_at: Date }>(
      `SELECT hits, reset_at FROM rate_limit_counters WHERE key = $1 AND reset_at > clock_timestamp()`,
      [this.prefix + key],
    );
    return rows[0] ? { totalHits: rows[0].hits, resetTime: rows[0].reset_at } : undefined;
  }

  async decrement(key: string): Promise<void> {
    await this.pool.query(`UPDATE rate_limit_counters SET hits = greatest(hits - 1, 0) WHERE key = $1`, [
      this.prefix + key,
    ]);
  }

  /** One hit back to the window `take` named, while it lasts by the database's clock; else nothing. */
  async giveBack(key: string, window: string): Promise<void> {
    await this.pool.query(
      `UPDATE rate_limit_counters SET hits = greatest(hits - 1, 0)
        WHERE key = $1 AND (extract(epoch FROM reset_at) * 1000000)::bigint = $2::bigint
          AND reset_at > clock_timestamp()`,
      [this.prefix + key, window],
    );
  }

  async resetKey(key: string): Promise<void> {
    await this.pool.query(`DELETE FROM rate_limit_counters WHERE key = $1`, [this.prefix + key]);
  }

  /** Deletes the counters whose window ended: idempotent, so every process running it at once is harmless. */
  async prune(): Promise<void> {
    await this.pool.query(`DELETE FROM rate_limit_counters WHERE reset_at <= clock_timestamp()`);
  }
}

/** DECR when the key exists with a positive count (it keeps its expiry); else nothing. */
const DECREMENT_LIVE_KEY = `if (tonumber(redis.call('get', KEYS[1]) or '0') > 0) then return redis.call('decr', KEYS[1]) end
return 0`;

/**
 * DECR only while the key's window is the one named (its absolute expiry, PEXPIRETIME, set once per window by
 * PEXPIRE NX) and it counts some: a key that expired and was counted again has another expiry.
 */
const DECREMENT_IN_WINDOW = `if redis.call('pexpiretime', KEYS[1]) == tonumber(ARGV[1]) and tonumber(redis.call('get', KEYS[1]) or '0') > 0 then return redis.call('decr', KEYS[1]) end
return 0`;

/**
 * Fixed-window counters in Redis: INCR, and PEXPIRE NX on the first hit of a window, in one MULTI; the key's
 * time to live is the window's reset time. Every process that shares the Redis counts together.
 */
export class RedisRateLimitStore implements WindowedStore {
  readonly localKeys = false;
  private windowMs = 60_000;

  constructor(
    private readonly redis: Redis,
    readonly prefix: string,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  increment(key: string): Promise<IncrementResponse> {
    return this.take(key);
  }

  /** The window is the key's absolute expiry in Redis's clock (PEXPIRETIME); resetTime stays in this process's. */
  async take(key: string): Promise<TakenHit> {
    const results = await this.redis
      .multi()
      .incr(this.prefix + key)
      .pexpire(this.prefix + key, this.windowMs, 'NX')
      .pttl(this.prefix + key)
      .pexpiretime(this.prefix + key)
      .exec();
    if (!results) throw new Error('rate limit: the Redis transaction was discarded');
    for (const [error] of results) if (error) throw error;
    const totalHits = Number(results[0][1]);
    const ttl = Number(results[2][1]);
    return {
      totalHits,
      resetTime: new Date(Date.now() + (ttl > 0 ? ttl : this.windowMs)),
      window: String(results[3][1]),
    };
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    const [hits, ttl] = await Promise.all([
      this.redis.get(this.prefix + key),
      this.redis.pttl(this.prefix + key),
    ]);
    if (hits === null || ttl <= 0) return undefined;
    return { totalHits: Number(hits), resetTime: new Date(Date.now() + ttl) };
  }

  /**
   * One hit given back, only to a key that still counts some: a DECR of a key whose window ended would leave -1
   * with no expiry, one request more in the next window and a key kept until then.
   */
  async decrement(key: string): Promise<void> {
    await this.redis.eval(DECREMENT_LIVE_KEY, 1, this.prefix + key);
  }

  /** One hit back to the window `take` named, while that key lives with that expiry; else nothing. */
  async giveBack(key: string, window: string): Promise<void> {
    await this.redis.eval(DECREMENT_IN_WINDOW, 1, this.prefix + key, window);
  }

  async resetKey(key: string): Promise<void> {
    await this.redis.del(this.prefix + key);
  }
}

/** What both the Redis store and express-rate-limit's MemoryStore answer. */
type CountingStore = Pick<RedisRateLimitStore, 'increment' | 'get' | 'decrement' | 'resetKey'>;

/** Connection states in which a command would only wait for Redis (ioredis's `status`). */
const REDIS_DOWN = new Set(['reconnecting', 'close', 'end']);

/**
 * The Redis counters, and this process's own while Redis does not answer (docs/decisions/0038): a limit whose
 * store fails would fail every request it guards (the token endpoint answered 500 to everyone), and one that
 * let everything through would not limit. While Redis is down (its connection reconnecting) or a command fails,
 * the hit is counted in a MemoryStore of this process: the limit holds per process until Redis answers again,
 * then the shared count takes over. A change of state is logged once, never a hit.
 */
export class FallbackRateLimitStore implements WindowedStore {
  readonly localKeys = false;
  private readonly local = new MemoryStore();
  private counting: 'shared' | 'local' = 'shared';

  constructor(
    private readonly shared: RedisRateLimitStore,
    private readonly redis: Redis,
    private readonly onChange: (counting: 'shared' | 'local', error?: unknown) => void,
  ) {}

  get prefix(): string {
    return this.shared.prefix;
  }

  init(options: Options): void {
    this.shared.init(options);
    this.local.init(options);
  }

  increment(key: string): Promise<IncrementResponse> {
    return this.either((store) => store.increment(key));
  }

  get(key: string): Promise<ClientRateLimitInfo | undefined> {
    return this.either((store) => store.get(key));
  }

  /** The window names the store that counted the hit too (`shared:` or `local:`): it goes back only there. */
  take(key: string): Promise<TakenHit> {
    return this.either(
      async (local) => {
        const { totalHits, resetTime } = await local.increment(key);
        return { totalHits, resetTime, window: `local:${resetTime?.getTime()}` };
      },
      async (shared) => {
        const hit = await shared.take(key);
        return { ...hit, window: `shared:${hit.window}` };
      },
    );
  }

  decrement(key: string): Promise<void> {
    return this.either((store) => store.decrement(key));
  }

  /**
   * A hit Redis counted goes back to Redis only, and not while it does not answer (it stays counted until its
   * window ends there); one this process counted, to this process's window it was counted in, while it lasts.
   */
  async giveBack(key: string, window: string): Promise<void> {
    const [where, id] = [window.slice(0, window.indexOf(':')), window.slice(window.indexOf(':') + 1)];
    if (where === 'shared') {
      if (!REDIS_DOWN.has(this.redis.status)) await this.shared.giveBack(key, id);
      return;
    }
    const live = await this.local.get(key);
    // No await between the look and the decrement: no hit of this process comes between them.
    if (live?.resetTime?.getTime() === Number(id)) await this.local.decrement(key);
  }

  resetKey(key: string): Promise<void> {
    return this.either((store) => store.resetKey(key));
  }

  shutdown(): void {
    this.local.shutdown();
  }

  private async either<T>(
    call: (store: CountingStore) => Promise<T>,
    shared: (store: RedisRateLimitStore) => Promise<T> = call,
  ): Promise<T> {
    if (!REDIS_DOWN.has(this.redis.status)) {
      try {
        const value = await shared(this.shared);
        this.count('shared');
        return value;
      } catch (error) {
        this.count('local', error);
      }
    } else {
      this.count('local');
    }
    return call(this.local);
  }

  private count(counting: 'shared' | 'local', error?: unknown): void {
    if (counting === this.counting) return;
    this.counting = counting;
    this.onChange(counting, error);
  }
}

/**
 * The express-rate-limit stores that count across processes: in Redis when the deployment has one
 * (REDIS_URL, under QUEUE_PREFIX), else in PostgreSQL. One Redis connection per process for all of them.
 */
@Injectable()
export class SharedRateLimitStores implements OnApplicationShutdown {
  private redis?: Redis;
  private pruner?: NodeJS.Timeout;
  private readonly postgresStores: PostgresRateLimitStore[] = [];

  private readonly fallbacks: FallbackRateLimitStore[] = [];

  constructor(
    @Inject(QUEUE_CONNECTION) private readonly connection: QueueConnection,
    @Inject(PG_POOL) private readonly pool: pg.Pool,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('RateLimit');
  }

  /** A store whose keys start with `name` (one name per limit). */
  store(name: string): WindowedStore {
    if (this.connection.kind === 'redis') {
      // Few retries: a token request waits on this, and a Redis that is down fails the request, never hangs it.
      this.redis ??= this.connect(this.connection.url);
      const store = new FallbackRateLimitStore(
        new RedisRateLimitStore(this.redis, `${this.connection.prefix ?? 'wallet'}:rl:${name}:`),
        this.redis,
        (counting, error) =>
          counting === 'local'
            ? this.logger.warn(
                { limit: name, err: error },
                'Redis does not answer: rate limit counted in this process',
              )
            : this.logger.info({ limit: name }, 'Redis answers again: rate limit counted across processes'),
      );
      this.fallbacks.push(store);
      return store;
    }
    const store = new PostgresRateLimitStore(this.pool, `${name}:`);
    this.postgresStores.push(store);
    this.pruner ??= setInterval(() => {
      // Only ended windows go; a failed prune is retried on the next tick.
      this.postgresStores[0].prune().catch(() => undefined);
    }, PRUNE_EVERY_MS).unref();
    return store;
  }

  /**
   * The one Redis connection of the stores. Its connection errors go to the log, once per half minute with how many
   * were left out: without a listener ioredis wrote each reconnect attempt's error to stderr as a raw trace, twice
   * a second while Redis was down (the stores' fallback logs when counting moves to the process and back).
   */
  private connect(url: string): Redis {
    const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
    redis.on('error', (error: Error) =>
      this.errors.report('rate-limit', (fields) =>
        this.logger.warn({ err: error, ...fields }, 'rate limit Redis connection error'),
      ),
    );
    return redis;
  }

  private readonly errors = new RepeatThrottle();

  async onApplicationShutdown(): Promise<void> {
    if (this.pruner) clearInterval(this.pruner);
    for (const store of this.fallbacks) store.shutdown();
    if (this.redis) await this.redis.quit().catch(() => this.redis?.disconnect());
  }
}
