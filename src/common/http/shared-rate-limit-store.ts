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
import { PG_POOL } from '../database/pg-pool.js';
import { QUEUE_CONNECTION, type QueueConnection } from '../queue/queue.factory.js';

/** How often a process deletes the PostgreSQL counters whose window ended (any process may; all are safe). */
const PRUNE_EVERY_MS = 60_000;

/**
 * Fixed-window counters in PostgreSQL: one row per key in the UNLOGGED table `rate_limit_counters`, counted
 * by one atomic upsert (a window that ended starts again at 1), so every process that shares the database
 * counts together. UNLOGGED: a crash empties the counters, which only forgives a minute of requests.
 */
export class PostgresRateLimitStore implements Store {
  readonly localKeys = false;
  private windowMs = 60_000;

  constructor(
    private readonly pool: pg.Pool,
    readonly prefix: string,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  async increment(key: string): Promise<IncrementResponse> {
    const { rows } = await this.pool.query<{ hits: number; reset_at: Date }>(
      `INSERT INTO rate_limit_counters AS c (key, hits, reset_at)
       VALUES ($1, 1, clock_timestamp() + $2 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE SET
         hits = CASE WHEN c.reset_at <= clock_timestamp() THEN 1 ELSE c.hits + 1 END,
         reset_at = CASE WHEN c.reset_at <= clock_timestamp() THEN EXCLUDED.reset_at ELSE c.reset_at END
       RETURNING hits, reset_at`,
      [this.prefix + key, this.windowMs],
    );
    return { totalHits: rows[0].hits, resetTime: rows[0].reset_at };
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
 * Fixed-window counters in Redis: INCR, and PEXPIRE NX on the first hit of a window, in one MULTI; the key's
 * time to live is the window's reset time. Every process that shares the Redis counts together.
 */
export class RedisRateLimitStore implements Store {
  readonly localKeys = false;
  private windowMs = 60_000;

  constructor(
    private readonly redis: Redis,
    readonly prefix: string,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  async increment(key: string): Promise<IncrementResponse> {
    const results = await this.redis
      .multi()
      .incr(this.prefix + key)
      .pexpire(this.prefix + key, this.windowMs, 'NX')
      .pttl(this.prefix + key)
      .exec();
    if (!results) throw new Error('rate limit: the Redis transaction was discarded');
    for (const [error] of results) if (error) throw error;
    const totalHits = Number(results[0][1]);
    const ttl = Number(results[2][1]);
    return { totalHits, resetTime: new Date(Date.now() + (ttl > 0 ? ttl : this.windowMs)) };
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
export class FallbackRateLimitStore implements Store {
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

  decrement(key: string): Promise<void> {
    return this.either((store) => store.decrement(key));
  }

  resetKey(key: string): Promise<void> {
    return this.either((store) => store.resetKey(key));
  }

  shutdown(): void {
    this.local.shutdown();
  }

  private async either<T>(call: (store: CountingStore) => Promise<T>): Promise<T> {
    if (!REDIS_DOWN.has(this.redis.status)) {
      try {
        const value = await call(this.shared);
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
  store(name: string): Store {
    if (this.connection.kind === 'redis') {
      // Few retries: a token request waits on this, and a Redis that is down fails the request, never hangs it.
      this.redis ??= new Redis(this.connection.url, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
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

  async onApplicationShutdown(): Promise<void> {
    if (this.pruner) clearInterval(this.pruner);
    for (const store of this.fallbacks) store.shutdown();
    if (this.redis) await this.redis.quit().catch(() => this.redis?.disconnect());
  }
}
