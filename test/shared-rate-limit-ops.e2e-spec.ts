import { Redis } from 'ioredis';
import pg from 'pg';
import type { Options, Store } from 'express-rate-limit';
import { PostgresRateLimitStore, RedisRateLimitStore } from '../src/common/http/shared-rate-limit-store.js';
import { createTestDatabase } from './support/database.js';

/** Long enough for 40 concurrent hits on a loaded machine to land in one window. */
const WINDOW_MS = 1_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The rate-limit stores that count across processes (decision 0033): two stores over one backend stand
 * for two API processes; what one counts, the other sees. The process-level proof (three APIs, one limit)
 * is check 6 of test/scale-out-faults.e2e-spec.ts.
 */
function behavesAsOneCounter(open: () => Promise<{ stores: [Store, Store]; close: () => Promise<void> }>) {
  let stores: [Store, Store];
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ stores, close } = await open());
    for (const store of stores) await store.init?.({ windowMs: WINDOW_MS } as Options);
  });
  afterAll(async () => close?.());

  it('counts concurrent hits from two processes as one sequence, each number once', async () => {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => stores[i % 2].increment('198.51.100.7')),
    );
    expect(results.map((result) => result.totalHits).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    const resets = new Set(results.map((result) => Math.round((result.resetTime?.getTime() ?? 0) / 100)));
    expect(resets.size).toBeLessThanOrEqual(2); // one window (rounding may straddle a boundary)
    await expect(stores[1].get?.('198.51.100.7')).resolves.toMatchObject({ totalHits: 40 });
    // Another key counts on its own.
    await expect(stores[0].increment('198.51.100.8')).resolves.toMatchObject({ totalHits: 1 });
  });

  it('starts a new window at 1 once the window ended; decrement and reset act for both', async () => {
    await sleep(WINDOW_MS + 100);
    await expect(stores[1].increment('198.51.100.7')).resolves.toMatchObject({ totalHits: 1 });
    await expect(stores[0].increment('198.51.100.7')).resolves.toMatchObject({ totalHits: 2 });
    await stores[0].decrement('198.51.100.7');
    await expect(stores[1].increment('198.51.100.7')).resolves.toMatchObject({ totalHits: 2 });
    await stores[1].resetKey('198.51.100.7');
    await expect(stores[0].increment('198.51.100.7')).resolves.toMatchObject({ totalHits: 1 });
  });

  it('gives a hit back only to a window that still counts: none to the next one, never below zero', async () => {
    await stores[0].increment('198.51.100.9');
    await sleep(WINDOW_MS + 100);
    // The window ended before its hit was given back (as a refused SIM swap check's may).
    await stores[0].decrement('198.51.100.9');
    await expect(stores[1].increment('198.51.100.9')).resolves.toMatchObject({ totalHits: 1 });
    await stores[1].decrement('198.51.100.9');
    await stores[0].decrement('198.51.100.9');
    await expect(stores[0].increment('198.51.100.9')).resolves.toMatchObject({ totalHits: 1 });
  });
}

describe('PostgresRateLimitStore (the counters without REDIS_URL)', () => {
  let pool: pg.Pool;
  behavesAsOneCounter(async () => {
    const database = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 8 });
    // pg-pool's end() resolves once it has asked its clients to end, before their connections are closed, and the
    // database's DROP … WITH (FORCE) then terminates a backend still open: a FATAL on an idle client, which the pool
    // re-emits as 'error' (unhandled, it failed this file now and then). The service's own pools listen for it too.
    pool.on('error', () => undefined);
    // Its 8 connections opened now, so the concurrent hits do not wait for them within one window.
    await Promise.all(Array.from({ length: 8 }, () => pool.query('SELECT 1')));
    return {
      stores: [new PostgresRateLimitStore(pool, 'token:'), new PostgresRateLimitStore(pool, 'token:')],
      close: async () => {
        await pool.end();
        await database.drop();
      },
    };
  });

  it('prunes only ended windows, and two prunes at once are harmless', async () => {
    const store = new PostgresRateLimitStore(pool, 'prune:');
    store.init({ windowMs: 60_000 } as Options);
    await store.increment('live');
    await pool.query(
      `INSERT INTO rate_limit_counters (key, hits, reset_at) VALUES ('prune:old', 5, now() - interval '1 second')`,
    );
    await Promise.all([store.prune(), store.prune()]);
    const { rows } = await pool.query<{ key: string }>(
      `SELECT key FROM rate_limit_counters WHERE key LIKE 'prune:%' ORDER BY key`,
    );
    expect(rows.map((row) => row.key)).toEqual(['prune:live']);
  });
});

// With `npm run test:redis` (TEST_REDIS_URL set) the Redis store is proven the same way.
if (process.env.TEST_REDIS_URL) {
  const redisUrl = process.env.TEST_REDIS_URL;
  describe('RedisRateLimitStore (the counters with REDIS_URL)', () => {
    behavesAsOneCounter(async () => {
      const clients = [new Redis(redisUrl), new Redis(redisUrl)];
      const prefix = `rl-test-${process.pid}:`;
      return {
        stores: [new RedisRateLimitStore(clients[0], prefix), new RedisRateLimitStore(clients[1], prefix)],
        close: async () => {
          for (const client of clients) await client.quit();
        },
      };
    });
  });
}
