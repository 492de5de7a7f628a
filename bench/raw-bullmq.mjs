// The raw BullMQ reference, in its own process (as the service's worker is): the same BullMQ, the same backend
// and the same job options as the service (src/common/queue/queue.factory.ts), a no-op processor.
//   1. warm-up: WARMUP jobs added and drained (not measured);
//   2. drain: JOBS jobs added in bulk, then a Worker (concurrency CONCURRENCY) started; drain jobs/s = JOBS ÷ the
//      time from the worker's start to the last 'completed';
//   3. latency: SAMPLES jobs one at a time at idle, each from just before queue.add() to its 'completed' event.
// Env: BACKEND=redis|postgres, URL (redis://… or postgres://…), PREFIX (Redis key prefix or PostgreSQL schema),
// JOBS, CONCURRENCY, SAMPLES, WARMUP. Prints one JSON line on stdout.
import { performance } from 'node:perf_hooks';
import { Queue, Worker, createPostgresBackend } from 'bullmq';
import { Redis } from 'ioredis';
import { percentile } from './lib/report.mjs';

const backend = process.env.BACKEND ?? 'redis';
const url = process.env.URL;
const prefix = process.env.PREFIX ?? 'benchraw';
const jobs = Number(process.env.JOBS ?? 20_000);
const concurrency = Number(process.env.CONCURRENCY ?? 50);
const samples = Number(process.env.SAMPLES ?? 200);
const warmup = Number(process.env.WARMUP ?? 500);
const name = 'raw';
// The service's defaults (queue.factory.ts DEFAULT_JOB_OPTIONS).
const defaultJobOptions = {
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

const redisConnections = [];
function makeQueue() {
  if (backend === 'redis') {
    const connection = new Redis(url, { maxRetriesPerRequest: null });
    redisConnections.push(connection);
    return new Queue(name, { prefix, connection, defaultJobOptions });
  }
  return new Queue(
    name,
    { defaultJobOptions, connection: { connectionString: url, schema: prefix, migrate: true, max: 3 } },
    createPostgresBackend,
  );
}
function makeWorker(processor) {
  if (backend === 'redis') {
    const connection = new Redis(url, { maxRetriesPerRequest: null });
    redisConnections.push(connection);
    return new Worker(name, processor, { prefix, connection, concurrency });
  }
  return new Worker(
    name,
    processor,
    { concurrency, connection: { connectionString: url, schema: prefix, migrate: true, max: 4 } },
    createPostgresBackend,
  );
}

const queue = makeQueue();
await queue.waitUntilReady();
await queue.obliterate({ force: true }).catch(() => undefined);

async function addAll(count) {
  for (let i = 0; i < count; i += 1000) {
    const batch = [];
    for (let j = i; j < Math.min(count, i + 1000); j++) batch.push({ name: 'noop', data: { i: j } });
    await queue.addBulk(batch);
  }
}

async function drain(count) {
  await addAll(count);
  let done = 0;
  let failed = 0;
  const started = performance.now();
  const worker = makeWorker(async () => undefined);
  const finished = await new Promise((resolve) => {
    worker.on('completed', () => {
      if (++done === count) resolve(performance.now());
    });
    worker.on('failed', () => {
      failed++;
      if (++done === count) resolve(performance.now());
    });
  });
  await worker.close();
  return { seconds: (finished - started) / 1000, failed };
}

await drain(warmup);
const measured = await drain(jobs);

// Latency at idle: one job at a time.
const waiting = new Map();
const completedAt = new Map();
const worker = makeWorker(async () => undefined);
worker.on('completed', (job) => {
  const at = performance.now();
  completedAt.set(job.id, at);
  waiting.get(job.id)?.(at);
});
await worker.waitUntilReady();
const latencies = [];
for (let i = 0; i < samples + 20; i++) {
  const started = performance.now();
  const job = await queue.add('noop', { i });
  // The job may complete before add() returns: its time is then already recorded.
  const finished = completedAt.get(job.id) ?? (await new Promise((resolve) => waiting.set(job.id, resolve)));
  waiting.delete(job.id);
  completedAt.delete(job.id);
  if (i >= 20) latencies.push(finished - started); // the first 20 warm the path
}
await worker.close();
await queue.obliterate({ force: true }).catch(() => undefined);
await queue.close();
for (const connection of redisConnections) connection.disconnect();

latencies.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    backend,
    jobs,
    concurrency,
    drainSeconds: measured.seconds,
    drainJobsPerSec: jobs / measured.seconds,
    failed: measured.failed,
    latencySamples: latencies.length,
    latencyP50Ms: percentile(latencies, 50),
    latencyP99Ms: percentile(latencies, 99),
    latencyMeanMs: latencies.reduce((a, b) => a + b, 0) / latencies.length,
  }),
);
process.exit(0);
