import { Redis } from 'ioredis';
import pg from 'pg';
import type { Options } from 'express-rate-limit';
import { randomUUID } from 'node:crypto';
import {
  FallbackRateLimitStore,
  PostgresRateLimitStore,
  RedisRateLimitStore,
  SharedRateLimitStores,
  type WindowedStore,
} from '../src/common/http/shared-rate-limit-store.js';
import { TooManyRequestsError } from '../src/common/errors/domain-errors.js';
import type { Principal } from '../src/common/auth/principal.js';
import { SimSwapLimits } from '../src/modules/mobile/sim-swap/sim-swap-limits.js';
import { createTestDatabase } from './support/database.js';
import { QueueFactory } from '../src/common/queue/queue.factory.js';
import { within } from '../src/common/async/within.js';
import { capturedLogger } from './support/logs.js';
import { pollUntil } from './support/poll.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** Long enough for 40 concurrent hits on a loaded machine to land in one window. */
const WINDOW_MS = 1_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The rate-limit stores that count across processes (decision 0033): two stores over one backend stand
 * for two API processes; what one counts, the other sees. The process-level proof (three APIs, one limit)
 * is check 6 of test/scale-out-faults.e2e-spec.ts.
 */
function behavesAsOneCounter(
  open: () => Promise<{ stores: [WindowedStore, WindowedStore]; close: () => Promise<void> }>,
) {
  let stores: [WindowedStore, WindowedStore];
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

  it('gives a taken hit back to the window it was taken in only: not to the next one (decision 0094)', async () => {
    const first = await stores[0].take('198.51.100.10');
    await sleep(WINDOW_MS + 100);
    // Its window ended before its hit was given back, and the next window counts one already.
    await expect(stores[1].take('198.51.100.10')).resolves.toMatchObject({ totalHits: 1 });
    await stores[0].giveBack('198.51.100.10', first.window);
    const third = await stores[1].take('198.51.100.10');
    expect(third.totalHits).toBe(2);
    // Within its window, by either process: given back.
    await stores[0].giveBack('198.51.100.10', third.window);
    await expect(stores[0].take('198.51.100.10')).resolves.toMatchObject({ totalHits: 2 });
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

/** The process's own counters while Redis does not answer (decision 0038): windows of its own, given back to. */
describe('FallbackRateLimitStore counting in the process', () => {
  let redis: Redis;
  let store: FallbackRateLimitStore;
  beforeAll(() => {
    // Nothing listens on port 1: every command fails at once, and the hit is counted in the process.
    redis = new Redis('redis://127.0.0.1:1', {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => 60_000,
    });
    redis.on('error', () => undefined);
    store = new FallbackRateLimitStore(
      new RedisRateLimitStore(redis, 'fallback-test:'),
      redis,
      () => undefined,
    );
    store.init({ windowMs: WINDOW_MS } as Options);
  });
  afterAll(() => {
    store.shutdown();
    redis.disconnect();
  });

  it('gives a taken hit back to the window it was taken in only (decision 0094)', async () => {
    const first = await store.take('local');
    await sleep(WINDOW_MS + 100);
    await expect(store.take('local')).resolves.toMatchObject({ totalHits: 1 });
    await store.giveBack('local', first.window);
    const third = await store.take('local');
    expect(third.totalHits).toBe(2);
    await store.giveBack('local', third.window);
    await expect(store.take('local')).resolves.toMatchObject({ totalHits: 2 });
  });
});

/**
 * The stores' own Redis connection while Redis does not answer: its errors go to the log as structured lines, once
 * per half minute (without an error listener ioredis wrote each reconnect attempt to stderr as a raw trace).
 */
describe("the service's Redis clients while Redis does not answer", () => {
  it('logs the connection errors once per half minute, as a structured warning with the error', async () => {
    const { logger, lines } = capturedLogger();
    // Nothing listens on port 1: every connection attempt fails at once.
    const stores = new SharedRateLimitStores(
      { kind: 'redis', url: 'redis://127.0.0.1:1', prefix: `rl-log-${process.pid}` },
      undefined as unknown as pg.Pool,
      logger,
    );
    stores.store('token');
    try {
      await pollUntil('a logged connection error', () =>
        lines.some((line) => line.msg === 'rate limit Redis connection error'),
      );
      await sleep(1_000); // several reconnect attempts fail meanwhile
      const errors = lines.filter((line) => line.msg === 'rate limit Redis connection error');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ level: 40, err: expect.objectContaining({ code: 'ECONNREFUSED' }) });
    } finally {
      await stores.onApplicationShutdown();
    }
  });

  it("the queues' shared connection, opened by the readiness ping alone, logs its errors too (decision 0100)", async () => {
    const { logger, lines } = capturedLogger();
    const queues = new QueueFactory(
      { kind: 'redis', url: 'redis://127.0.0.1:1', prefix: `q-log-${process.pid}` },
      logger,
    );
    try {
      await within(1_000, () => queues.ping()); // waits for a connection that never comes
      await pollUntil('a logged connection error', () => lines.some((line) => line.queue === 'shared'));
      expect(lines.find((line) => line.queue === 'shared')).toMatchObject({
        level: 40,
        msg: 'queue connection error',
        err: expect.objectContaining({ code: 'ECONNREFUSED' }),
      });
    } finally {
      await queues.onApplicationShutdown();
    }
  });
});

/**
 * SIM swap units given back (decisions 0058, 0080) land in the window they were taken in, on the store the service
 * counts in (PostgreSQL; Redis with `npm run test:redis`). A check's window ends while the provider is asked (this
 * process's clock a little behind the store's, or the call ending right at the window's end), a check of the next
 * window takes a unit, and the first check's unit is given back: to the ended window, so nothing changes.
 */
describe('SimSwapLimits over the shared store (2 checks a minute per application here)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SIM_SWAP_APP_LIMIT_PER_MINUTE: '2' } });
  });
  afterAll(() => t?.close());

  /** Ends the application's current window in the store, as a minute going by does (its counter stays). */
  async function endWindow(appId: string): Promise<void> {
    if (process.env.TEST_REDIS_URL) {
      const redis = new Redis(process.env.TEST_REDIS_URL);
      try {
        const keys = await redis.keys(`*:rl:simswap-app:${appId}`);
        expect(keys).toHaveLength(1);
        await redis.pexpire(keys[0], 1);
        await sleep(20);
      } finally {
        await redis.quit();
      }
    } else {
      const [, ended] = (await t.dataSource.query(
        `UPDATE rate_limit_counters SET reset_at = clock_timestamp() WHERE key = $1`,
        [`simswap-app:${appId}`],
      )) as [unknown, number];
      expect(ended).toBe(1);
    }
  }

  it('gives a unit back to the window it was taken in, never to the next one', async () => {
    const limits = t.app.get(SimSwapLimits);
    const appId = randomUUID();
    const principal: Principal = { kind: 'client', appId };
    const first = await limits.take(principal);
    await endWindow(appId);
    await limits.take(principal); // the next window: 1
    await limits.giveBack(first); // the provider did not make the first check
    const outcomes: string[] = [];
    for (let i = 0; i < 2; i++) {
      outcomes.push(
        await limits.take(principal).then(
          () => 'taken',
          (error: unknown) => (error instanceof TooManyRequestsError ? 'refused' : String(error)),
        ),
      );
    }
    // Two checks in this window: the first of it, and one more; the third is refused.
    expect(outcomes).toEqual(['taken', 'refused']);
  });
});
