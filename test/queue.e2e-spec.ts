import { createHook } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Job } from 'bullmq';
import pg from 'pg';
import { JOBS, QUEUES } from '../src/common/queue/queue-names.js';
import {
  QueueFactory,
  type AppQueue as Queue,
  type AppWorker as Worker,
  type QueueConnection,
} from '../src/common/queue/queue.factory.js';
import { UsedAssertionEntity } from '../src/modules/auth/entities/used-assertion.entity.js';
import { createTestDatabase } from './support/database.js';
import { pollUntil } from './support/poll.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** pollUntil with this suite's 20 s: its jobs run on a worker that may start late on a loaded machine. */
const waitFor = (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000) =>
  pollUntil(what, check, timeoutMs);

/** Open TCP sockets of this process (connections to PostgreSQL or Redis). */
const openSockets = () => process.getActiveResourcesInfo().filter((type) => type === 'TCPSocketWrap').length;

const backend = process.env.TEST_REDIS_URL ? 'redis' : 'postgres';

interface Recorded {
  id: string;
  name: string;
  data: unknown;
}

describe(`QueueFactory on the ${backend} backend`, () => {
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let factory: QueueFactory;
  let queue: Queue;
  let worker: Worker;
  /** Job names are unique to this run, so a shared Redis cannot mix in other runs' jobs. */
  const run = randomUUID().slice(0, 8);
  const name = (label: string) => `test-${label}-${run}`;
  const started: Recorded[] = [];
  const startedCount = (jobName: string) => started.filter((job) => job.name === jobName).length;
  let maxParallel = 0;
  let running = 0;
  let socketsBefore = 0;

  beforeAll(async () => {
    let connection: QueueConnection;
    if (process.env.TEST_REDIS_URL) {
      connection = { kind: 'redis', url: process.env.TEST_REDIS_URL };
    } else {
      database = await createTestDatabase();
      connection = { kind: 'postgres', url: database.url };
    }
    socketsBefore = openSockets();
    factory = new QueueFactory(connection);
    expect(factory.backend).toBe(backend);
    queue = factory.queue(QUEUES.maintenance);
    worker = factory.worker(
      QUEUES.maintenance,
      async (job: Job) => {
        if (!job.name.endsWith(run)) return undefined;
        started.push({ id: job.id ?? '', name: job.name, data: job.data });
        running++;
        maxParallel = Math.max(maxParallel, running);
        try {
          await new Promise((resolve) => setTimeout(resolve, 20));
          // A job fails its first `failTimes` attempts.
          const failTimes = (job.data as { failTimes?: number }).failTimes ?? 0;
          if (started.filter((entry) => entry.id === job.id).length <= failTimes)
            throw new Error('transient failure');
          return { doubled: (job.data as { n: number }).n * 2 };
        } finally {
          running--;
        }
      },
      { concurrency: 5 },
    );
  });

  afterAll(async () => {
    // Idempotent: the last test shuts the factory down already.
    await factory?.onApplicationShutdown();
    await database?.drop();
  });

  it('answers ping', async () => {
    await expect(factory.ping()).resolves.toBeUndefined();
  });

  it('returns one producer per queue name', () => {
    expect(factory.queue(QUEUES.maintenance)).toBe(queue);
  });

  it('processes 50 jobs exactly once each, up to 5 at a time', async () => {
    const jobName = name('bulk');
    const added = await Promise.all(
      Array.from({ length: 50 }, (_, n) => queue.add(jobName, { n, tag: `job-${n}` })),
    );
    expect(new Set(added.map((job) => job.id)).size).toBe(50);

    await waitFor('50 completed jobs', async () => {
      const states = await Promise.all(added.map((job) => job.getState()));
      return states.every((state) => state === 'completed');
    });

    const bulk = started.filter((job) => job.name === jobName);
    expect(bulk).toHaveLength(50);
    expect(new Set(bulk.map((job) => job.id)).size).toBe(50);
    expect(bulk.map((job) => (job.data as { n: number }).n).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, n) => n),
    );
    expect(bulk.map((job) => job.data)).toEqual(
      expect.arrayContaining(Array.from({ length: 50 }, (_, n) => ({ n, tag: `job-${n}` }))),
    );
    expect(maxParallel).toBeGreaterThan(1);
    expect(maxParallel).toBeLessThanOrEqual(5);

    const last = await queue.getJob(added[49].id ?? '');
    expect(last?.returnvalue).toEqual({ doubled: 98 });
  });

  it('processes a job added twice under one jobId once', async () => {
    const jobName = name('dedup');
    const jobId = `dedup-${run}`;
    const first = await queue.add(jobName, { n: 1 }, { jobId });
    const second = await queue.add(jobName, { n: 2 }, { jobId });
    expect(first.id).toBe(jobId);
    expect(second.id).toBe(jobId);
    await waitFor(
      'the deduplicated job to complete',
      async () => (await queue.getJobState(jobId)) === 'completed',
    );

    // Still known (kept after completion), the same id is refused again.
    await queue.add(jobName, { n: 3 }, { jobId });
    // A later job as a barrier: a duplicate accepted before it would have started by the time it completes.
    const barrier = await queue.add(name('barrier'), { n: 0 });
    await waitFor('the barrier job to complete', async () => (await barrier.getState()) === 'completed');

    expect(started.filter((job) => job.name === jobName)).toEqual([
      { id: jobId, name: jobName, data: { n: 1 } },
    ]);
    expect((await queue.getJob(jobId))?.data).toEqual({ n: 1 });
  });

  it('retries a job that fails once (attempts: 2) and then completes it', async () => {
    const jobName = name('flaky');
    const job = await queue.add(jobName, { n: 21, failTimes: 1 }, { attempts: 2 });
    await waitFor('the flaky job to complete', async () => (await job.getState()) === 'completed');

    expect(startedCount(jobName)).toBe(2);
    expect(started.filter((entry) => entry.name === jobName).map((entry) => entry.id)).toEqual([
      job.id,
      job.id,
    ]);
    const done = await queue.getJob(job.id ?? '');
    expect(done?.returnvalue).toEqual({ doubled: 42 });
    expect(done?.attemptsMade).toBe(2);
  });

  it('fails a job for good once its attempts are used up', async () => {
    const jobName = name('doomed');
    const job = await queue.add(jobName, { n: 1, failTimes: 5 }, { attempts: 2 });
    await waitFor('the job to fail', async () => (await job.getState()) === 'failed');
    expect(startedCount(jobName)).toBe(2);
    const failed = await queue.getJob(job.id ?? '');
    expect(failed?.failedReason).toBe('transient failure');
    expect(failed?.attemptsMade).toBe(2);
  });

  it('closes every worker, queue and connection on shutdown', async () => {
    expect(worker.isRunning()).toBe(true);
    expect(openSockets()).toBeGreaterThan(socketsBefore);
    await factory.onApplicationShutdown();
    expect(worker.isRunning()).toBe(false);
    // No socket of the factory stays open (it would keep the process alive).
    await waitFor('the queue sockets to close', () => openSockets() <= socketsBefore, 5_000);

    // Nest and this file's afterAll may shut down twice: the second time must not arm timers
    // (an ended ioredis client's disconnect() leaves one that holds the process for 2 s).
    const timers: string[] = [];
    const hook = createHook({
      init(_id, type) {
        if (type === 'Timeout') timers.push(new Error().stack ?? '');
      },
    }).enable();
    try {
      await factory.onApplicationShutdown();
    } finally {
      hook.disable();
    }
    expect(timers.filter((stack) => stack.includes('queue.factory'))).toEqual([]);

    if (database) {
      // Nothing of the factory stays connected to the test database.
      const admin = new pg.Client({ connectionString: process.env.TEST_PG_ADMIN_URL });
      await admin.connect();
      try {
        const dbName = new URL(database.url).pathname.slice(1);
        await waitFor(
          'the queue connections to close',
          async () => {
            const result = await admin.query<{ n: number }>(
              'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1',
              [dbName],
            );
            return result.rows[0].n === 0;
          },
          5_000,
        );
      } finally {
        await admin.end();
      }
    }
  });
});

describe('PruneUsedAssertionsProcessor (through the worker)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ runWorker: true });
  });
  afterAll(() => t?.close());

  it('deletes the expired used assertions and keeps the live ones', async () => {
    const appId = randomUUID();
    const repository = t.dataSource.getRepository(UsedAssertionEntity);
    await repository.insert([
      { appId, jti: 'expired', expiresAt: new Date(Date.now() - 60_000) },
      { appId, jti: 'live', expiresAt: new Date(Date.now() + 3_600_000) },
    ]);

    const queue = t.app.get(QueueFactory).queue(QUEUES.maintenance);
    const job = await queue.add(JOBS.pruneUsedAssertions, {});

    await waitFor(
      'the expired row to be deleted',
      async () => (await repository.countBy({ appId, jti: 'expired' })) === 0,
    );
    const remaining = await repository.findBy({ appId });
    expect(remaining.map((row) => row.jti)).toEqual(['live']);

    await waitFor('the prune job to complete', async () => (await job.getState()) === 'completed');
    const done = await queue.getJob(job.id ?? '');
    // The scheduler's own run may have pruned the row first: the count is not asserted.
    expect(done?.returnvalue).toEqual({ deleted: expect.any(Number) });
  });

  it('registers the recurring prune job scheduler (in the background of the start)', async () => {
    const queue = t.app.get(QueueFactory).queue(QUEUES.maintenance);
    await waitFor('the scheduler', async () =>
      Boolean(await queue.getJobScheduler(JOBS.pruneUsedAssertions)),
    );
    const scheduler = await queue.getJobScheduler(JOBS.pruneUsedAssertions);
    expect(scheduler).toMatchObject({ key: JOBS.pruneUsedAssertions, every: 600_000 });
  });
});
