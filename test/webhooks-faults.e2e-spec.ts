import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JobType } from 'bullmq';
import type { JSONWebKeySet } from 'jose';
import { Global, Module } from '@nestjs/common';
import type pg from 'pg';
import request from 'supertest';
import { PG_POOL } from '../src/common/database/pg-pool.js';
import { PinoLogger } from '../src/common/logging/pino-logger.js';
import { QUEUES } from '../src/common/queue/queue-names.js';
import { QueueFactory } from '../src/common/queue/queue.factory.js';
import { AppsService } from '../src/modules/apps/apps.service.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import { SigningKeysService } from '../src/modules/auth/signing-keys.service.js';
import {
  WEBHOOK_DELIVERY_LIMITS,
  WebhookDeliveryService,
  type DeliveryLimits,
} from '../src/modules/webhooks/webhook-delivery.service.js';
import { WEBHOOK_EVENTS } from '../src/modules/webhooks/webhook-events.js';
import { WebhooksService } from '../src/modules/webhooks/webhooks.service.js';
import { accessToken, registerClient } from './support/auth.js';
import {
  childEnv,
  CLI_JS,
  freePort,
  isProcessRunning,
  MAIN_JS,
  postmastersOf,
  ROOT,
  runNode,
  waitFor,
} from './support/processes.js';
import { startTestApp, type TestApp, type TestAppOptions } from './support/test-app.js';
import {
  isolatedRedisEnv,
  pollUntil,
  sleep,
  verifyWebhook,
  WebhookReceiver,
  type Responder,
} from './support/webhook-receiver.js';
import { freshKeyPair } from './support/keys.js';

const WORKER_JS = path.join(ROOT, 'dist/src/worker.js');
const FAST = {
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_RETRY_DELAYS: '100ms,200ms,300ms',
  WEBHOOK_SWEEP_INTERVAL_MS: '200',
};
const backend = process.env.TEST_REDIS_URL ? 'redis' : 'postgres';

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Every process this file starts, so that none outlives it. */
const started: ChildProcess[] = [];

function start(command: string, args: string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => output, exited };
}

/** Waits (bounded) until the process printed `text`; fails with its output if it exited or took too long. */
async function waitForOutput(running: Running, text: string, timeoutMs = 20_000): Promise<void> {
  const seen = await waitFor(
    () =>
      running.output().includes(text) || running.child.exitCode !== null || running.child.signalCode !== null,
    timeoutMs,
    50,
  );
  if (!seen || !running.output().includes(text)) {
    throw new Error(
      `process did not print "${text}" (exit ${running.child.exitCode}):\n${running.output().slice(-3000)}`,
    );
  }
}

/** Sends `signal` and waits (bounded) for the exit. */
async function stop(running: Running, signal: NodeJS.Signals, timeoutMs = 20_000) {
  running.child.kill(signal);
  const outcome = await Promise.race([
    running.exited,
    new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref()),
  ]);
  if (outcome === 'timeout') throw new Error(`the process did not exit within ${timeoutMs} ms of ${signal}`);
  return outcome;
}

async function startRedis(port: number): Promise<Running> {
  const redis = start(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    process.env,
  );
  await waitForOutput(redis, 'Ready to accept connections', 10_000);
  return redis;
}

const jwksOf = async (t: TestApp): Promise<JSONWebKeySet> =>
  (await request(t.http).get('/v1/.well-known/jwks.json')).body as JSONWebKeySet;

/** Emits `count` test events for `appId`, each in a transaction of its own. */
async function emitMany(t: TestApp, appId: string, count: number, label: string): Promise<string[]> {
  const webhooks = t.app.get(WebhooksService);
  const ids: string[] = [];
  for (let n = 0; n < count; n++) {
    ids.push(
      await t.dataSource.transaction((manager) =>
        webhooks.emit(manager, { appId, event: WEBHOOK_EVENTS.test, data: { message: `${label} ${n}` } }),
      ),
    );
  }
  return ids;
}

/**
 * Every id acknowledged exactly once, and every row delivered. The worker marks a row delivered after the
 * receiver's answer reaches it, so the rows are given a bounded while to catch up with the receiver.
 */
async function expectAllDeliveredOnce(t: TestApp, receiver: WebhookReceiver, ids: string[]): Promise<void> {
  const undelivered = async () =>
    (
      (await t.dataSource.query('SELECT id, status FROM webhook_events WHERE id = ANY($1)', [ids])) as {
        id: string;
        status: string;
      }[]
    ).filter((row) => row.status !== 'delivered');
  await waitFor(async () => (await undelivered()).length === 0, 10_000, 50);
  for (const id of ids) expect(receiver.acknowledged(id)).toHaveLength(1);
  const rows = (await t.dataSource.query('SELECT count(*)::int AS n FROM webhook_events WHERE id = ANY($1)', [
    ids,
  ])) as { n: number }[];
  expect(rows).toEqual([{ n: ids.length }]);
  expect(await undelivered()).toEqual([]);
}

/** A delivery service of the real code on the test app's database, queue and keys, with `limits` of its own. */
const deliveryService = async (t: TestApp, limits?: Partial<DeliveryLimits>) =>
  new WebhookDeliveryService(
    t.app.get<pg.Pool>(PG_POOL),
    t.config,
    t.app.get(SigningKeysService),
    t.app.get(QueueFactory),
    await t.app.resolve(PinoLogger),
    limits,
  );

const allAcknowledged = (receiver: WebhookReceiver, ids: string[]) => () =>
  ids.every((id) => receiver.acknowledged(id).length > 0);

/**
 * Small delivery limits for the worker of a test app (WEBHOOK_DELIVERY_LIMITS): 100 deliveries in flight, 8 POSTs
 * per origin (so 16 claims waiting for them, the default of twice as many), claims given back for at most 2 s.
 */
@Global()
@Module({
  providers: [
    {
      provide: WEBHOOK_DELIVERY_LIMITS,
      useValue: { deliveriesInFlight: 100, postsPerOrigin: 8, shortWaitMs: 500, laterMaxMs: 2_000 },
    },
  ],
  exports: [WEBHOOK_DELIVERY_LIMITS],
})
class SmallDeliveryLimits {}

describe(`webhook faults lose nothing (${backend} queue backend)`, () => {
  const receivers: WebhookReceiver[] = [];
  const apps: TestApp[] = [];

  const receiverFor = async (responder?: Responder) => {
    const receiver = await WebhookReceiver.start(responder);
    receivers.push(receiver);
    return receiver;
  };

  /**
   * The API side only (no relay, sweeper or delivery in this process), on Redis database `redisDb` of its own:
   * it registers the application `name`, whose webhook URL is a receiver answering with `responder`, and emits
   * through WebhooksService in real transactions. `workerEnv` is what a real `node dist/src/worker.js` gets to
   * run on the same database and queue, and on the same DATA_DIR (so it signs with the key this app publishes).
   */
  const withWorkerProcesses = async (
    redisDb: number,
    name: string,
    responder: Responder,
    workerExtra: Record<string, string> = {},
  ) => {
    const t = await startTestApp({
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ...isolatedRedisEnv(redisDb) },
    });
    apps.push(t);
    const receiver = await receiverFor(responder);
    const { appId } = await registerClient(t.app, name);
    await t.app.get(AppsService).setWebhook(appId, receiver.url(), cliActor('test'));
    const workerEnv = childEnv({
      ...FAST,
      ...isolatedRedisEnv(redisDb),
      DATABASE_URL: t.databaseUrl,
      DATA_DIR: t.dataDir,
      LOG_LEVEL: 'info',
      ...workerExtra,
    });
    return { t, receiver, appId, workerEnv };
  };

  /**
   * A test app with the worker in this process (`env` and `extraModules` added), and two applications: `flooding`,
   * whose receiver accepts requests and never answers, and `other`, whose receiver answers.
   */
  const hangingBesideAnswering = async (
    env: Record<string, string>,
    extraModules?: TestAppOptions['extraModules'],
  ) => {
    const t = await startTestApp({
      runWorker: true,
      extraModules,
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ...isolatedRedisEnv(10), ...env },
    });
    apps.push(t);
    const hanging = await receiverFor(() => 'hang');
    const answering = await receiverFor(() => ({ status: 200 }));
    const withReceiver = async (name: string, receiver: WebhookReceiver) => {
      const { appId } = await registerClient(t.app, name);
      await t.app.get(AppsService).setWebhook(appId, receiver.url(), cliActor('test'));
      return appId;
    };
    const flooding = await withReceiver('hanging receiver', hanging);
    const other = await withReceiver('answering receiver', answering);
    /**
     * Once the hanging receiver holds `held` requests, emits an event for the other application and waits until its
     * receiver acknowledged it: then, how many requests the hanging receiver had got, and how many timed out.
     */
    const otherEventPastTheBacklog = async (held: number) => {
      await pollUntil(
        `the hanging receiver to hold ${held} requests`,
        () => hanging.requests.length >= held,
        30_000,
      );
      const [event] = await emitMany(t, other, 1, 'other');
      await pollUntil(
        "the other application's event",
        () => answering.acknowledged(event).length === 1,
        30_000,
      );
      return {
        received: hanging.requests.length,
        timedOut: hanging.requests.filter((request) => request.abandonedAt !== undefined).length,
      };
    };
    return { t, hanging, flooding, otherEventPastTheBacklog };
  };

  afterEach(async () => {
    for (const child of started) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
    for (const app of apps.splice(0)) await app.close();
  });

  afterAll(async () => {
    const gone = await waitFor(
      () => started.every((child) => child.pid === undefined || !isProcessRunning(child.pid)),
      5_000,
    );
    expect(gone).toBe(true);
  });

  it('delivers every event when the worker is killed mid-delivery and another one starts', async () => {
    // The first request is held open and never answered; every later one is acknowledged.
    const { t, receiver, appId, workerEnv } = await withWorkerProcesses(
      13,
      'faults',
      (req) => (req.index === 0 ? 'hang' : { status: 200 }),
      { WEBHOOK_TIMEOUT_MS: '5000' },
    );
    const first = start(process.execPath, [WORKER_JS], workerEnv);
    await waitForOutput(first, '"msg":"worker running"');

    const [held] = await emitMany(t, appId, 1, 'held');
    await pollUntil('the first request', () => receiver.requests.length > 0, 15_000);
    expect(receiver.requests[0].id).toBe(held);
    expect(await stop(first, 'SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });

    const meanwhile = await emitMany(t, appId, 20, 'meanwhile');
    const pending = (await t.dataSource.query(
      `SELECT count(*)::int AS n FROM webhook_events WHERE app_id = $1 AND status = 'pending'`,
      [appId],
    )) as { n: number }[];
    expect(pending).toEqual([{ n: 21 }]);

    const second = start(process.execPath, [WORKER_JS], workerEnv);
    await waitForOutput(second, '"msg":"worker running"');
    const ids = [held, ...meanwhile];
    await pollUntil('all 21 events acknowledged', allAcknowledged(receiver, ids), 45_000);

    await expectAllDeliveredOnce(t, receiver, ids);
    expect(receiver.requests[0].answeredAt).toBeUndefined(); // the killed attempt was never answered
    expect(receiver.attemptsOf(held).length).toBeGreaterThanOrEqual(2);
    const jwks = await jwksOf(t);
    const { payload } = await verifyWebhook(receiver.acknowledged(held)[0].body, jwks);
    expect(payload).toMatchObject({ event: 'webhook_test', data: { message: 'held 0' } });
    expect(await stop(second, 'SIGTERM')).toEqual({ code: 0, signal: null });
  }, 120_000);

  it('stops a worker during a burst once its started POSTs end; what it had not sent goes out from the next one, each once', async () => {
    const { t, receiver, appId, workerEnv } = await withWorkerProcesses(15, 'stopping', () => ({
      status: 200,
      delayMs: 300,
    }));
    const first = start(process.execPath, [WORKER_JS], workerEnv);
    await waitForOutput(first, '"msg":"worker running"');

    // 1,500 events in one transaction: 30 batch jobs; the worker claims 1,000 of them (its bound) and POSTs
    // 64 at a time (the receiver's connections) to a receiver that answers each after 300 ms.
    const webhooks = t.app.get(WebhooksService);
    const ids = await t.dataSource.transaction(async (manager) => {
      const emitted: string[] = [];
      for (let n = 0; n < 1500; n++) {
        emitted.push(
          await webhooks.emit(manager, {
            appId,
            event: WEBHOOK_EVENTS.test,
            data: { message: `burst ${n}` },
          }),
        );
      }
      return emitted;
    });
    await pollUntil('the first answers', () => receiver.acknowledged().length >= 64, 30_000);
    expect(await stop(first, 'SIGTERM')).toEqual({ code: 0, signal: null });

    // It ended with what it had started: most of the burst is still pending, none of it leased, and no event
    // counts an attempt it did not make (a claim given back undid its attempt number).
    const [left] = (await t.dataSource.query(
      `SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
              count(*) FILTER (WHERE lease_until IS NOT NULL)::int AS leased,
              count(*) FILTER (WHERE attempts <> (SELECT count(*) FROM webhook_attempts a WHERE a.event_id = e.id))::int
                AS phantom
         FROM webhook_events e WHERE id = ANY($1)`,
      [ids],
    )) as { pending: number; leased: number; phantom: number }[];
    expect(left.pending).toBeGreaterThan(500);
    expect(left.leased).toBe(0);
    expect(left.phantom).toBe(0);

    const second = start(process.execPath, [WORKER_JS], workerEnv);
    await waitForOutput(second, '"msg":"worker running"');
    await pollUntil('all 1,500 events acknowledged', allAcknowledged(receiver, ids), 90_000);
    await expectAllDeliveredOnce(t, receiver, ids);
    expect(await stop(second, 'SIGTERM')).toEqual({ code: 0, signal: null });
  }, 150_000);

  it("holds a receiver that never answers to its own connections: another application's event goes out past its backlog, and every attempt counted was sent", async () => {
    // One application's receiver accepts requests and never answers; its application has 600 events (a tenant can
    // make them cheaply, e.g. small transfers between its own accounts). Another application's receiver answers.
    const { t, hanging, flooding, otherEventPastTheBacklog } = await hangingBesideAnswering({
      WEBHOOK_TIMEOUT_MS: '5000',
      WEBHOOK_RETRY_DELAYS: '1h',
    });
    const webhooks = t.app.get(WebhooksService);
    await t.dataSource.transaction(async (manager) => {
      for (let n = 0; n < 600; n++) {
        await webhooks.emit(manager, {
          appId: flooding,
          event: WEBHOOK_EVENTS.test,
          data: { message: `${n}` },
        });
      }
    });
    // The other application's event went out while the hanging receiver still held open every request it had got,
    // none of them timed out: the backlog held its origin's 64 slots, not the worker's 200 shared ones.
    expect(await otherEventPastTheBacklog(64)).toEqual({ received: 64, timedOut: 0 });

    // Once the first attempts time out, each one recorded is one the receiver got: nothing waited for a connection
    // until its deadline and was counted as sent.
    const recorded = async () =>
      (
        (await t.dataSource.query(
          `SELECT a.event_id AS id FROM webhook_attempts a JOIN webhook_events e ON e.id = a.event_id
            WHERE e.app_id = $1`,
          [flooding],
        )) as { id: string }[]
      ).map((row) => row.id);
    await pollUntil('the first attempts to be recorded', async () => (await recorded()).length >= 64, 30_000);
    const received = new Set(hanging.requests.map((request) => request.id));
    const attempts = await recorded();
    expect({ attempts: attempts.length, unsent: attempts.filter((id) => !received.has(id)).length }).toEqual({
      attempts: expect.any(Number),
      unsent: 0,
    });
  }, 90_000);

  it("does not let a hanging receiver's backlog hold the worker's deliveries: another application's event goes out past it, and after recovery each event goes once, in order", async () => {
    // The worker delivers at most 100 events at once, 8 POSTs per origin. One application's receiver accepts
    // requests and never answers; its application has 800 events, two for each of 400 subjects: 400 can be claimed
    // at once, four times the worker's deliveries. Another application's receiver answers.
    const { t, hanging, flooding, otherEventPastTheBacklog } = await hangingBesideAnswering(
      { WEBHOOK_TIMEOUT_MS: '10000', WEBHOOK_RETRY_DELAYS: '200ms,200ms,200ms' },
      [SmallDeliveryLimits],
    );
    const webhooks = t.app.get(WebhooksService);
    const subjects = Array.from({ length: 400 }, (_, n) => `subject ${n}`);
    const bySubject = await t.dataSource.transaction(async (manager) => {
      const ids = new Map<string, string[]>(subjects.map((subject) => [subject, []]));
      for (const round of [0, 1]) {
        for (const subject of subjects) {
          const id = await webhooks.emit(manager, {
            appId: flooding,
            event: WEBHOOK_EVENTS.test,
            subject,
            data: { message: `${subject}, ${round}` },
          });
          ids.get(subject)?.push(id);
        }
      }
      return ids;
    });
    const backlog = [...bySubject.values()].flat();
    // The other application's event went out while the hanging receiver held open the 8 requests it had got, none
    // of them timed out: the backlog's claims beyond what its origin can take were given back, not kept waiting in
    // the worker's deliveries.
    expect(await otherEventPastTheBacklog(8)).toEqual({ received: 8, timedOut: 0 });
    // Every backlog event is pending; an attempt is counted only on a claim still held (none has ended yet), so a
    // claim given back counts none.
    const [state] = (await t.dataSource.query(
      `SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
              count(*) FILTER (WHERE attempts > 0 AND lease_until IS NULL)::int AS "countedUnheld",
              (SELECT count(*)::int FROM webhook_attempts a WHERE a.event_id = ANY($1)) AS "attemptRows"
         FROM webhook_events WHERE id = ANY($1)`,
      [backlog],
    )) as { pending: number; countedUnheld: number; attemptRows: number }[];
    expect(state).toEqual({ pending: 800, countedUnheld: 0, attemptRows: 0 });

    // The receiver restarts (the 8 requests it held are dropped) and answers from now on.
    hanging.recover(() => ({ status: 200 }));
    await pollUntil('the whole backlog acknowledged', allAcknowledged(hanging, backlog), 90_000);
    await expectAllDeliveredOnce(t, hanging, backlog);
    // Per subject, the second event's first request came after the first event's acknowledgement.
    for (const [first, second] of bySubject.values()) {
      expect(hanging.attemptsOf(second)[0].index).toBeGreaterThan(hanging.acknowledged(first)[0].index);
    }
    // Every attempt counted is one the receiver got: the 8 dropped ones and the acknowledged ones.
    const counted = (await t.dataSource.query(
      `SELECT e.id, e.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.event_id = e.id) AS rows
         FROM webhook_events e WHERE e.id = ANY($1)`,
      [backlog],
    )) as { id: string; attempts: number; rows: number }[];
    const unlike = counted.filter(
      (row) => row.attempts !== row.rows || row.rows !== hanging.attemptsOf(row.id).length,
    );
    expect({ events: counted.length, unlike }).toEqual({ events: 800, unlike: [] });
  }, 150_000);

  it('never POSTs a claim whose lease may run out during the attempt; the next claim delivers it, once', async () => {
    // Two workers on one database, as the service's own (nothing in this process delivers by itself). The slow
    // one has a single POST slot and a lease of WEBHOOK_TIMEOUT_MS (3 s) + 1.5 s, and claims two events at once.
    // The receiver answers the first request of each event after 2.5 s (within the timeout), later ones at once:
    // the second event gets its slot with about 2 s of lease left, less than an attempt may take (3.25 s). The
    // first has 1.25 s to be signed and sent (under a full suite's load its signing took more than 250 ms). The other
    // worker claims it as soon as nobody holds it, as the sweeper's job would.
    const t = await startTestApp({
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_TIMEOUT_MS: '3000', ...isolatedRedisEnv(10) },
    });
    apps.push(t);
    const receiver = await receiverFor((req, self) => ({
      status: 200,
      delayMs: self.attemptsOf(req.id).length === 1 ? 2_500 : 0,
    }));
    const { appId } = await registerClient(t.app, 'slow receiver');
    await t.app.get(AppsService).setWebhook(appId, receiver.url(), cliActor('test'));
    const slow = await deliveryService(t, { postsInFlight: 1, leaseExtraMs: 1_500, leaseMarginMs: 250 });
    const other = await deliveryService(t);
    const leaseOf = async (id: string) =>
      (
        (await t.dataSource.query(
          `SELECT lease_until > now() AS held, status, attempts,
                  (SELECT count(*)::int FROM webhook_attempts a WHERE a.event_id = e.id) AS rows
             FROM webhook_events e WHERE id = $1`,
          [id],
        )) as { held: boolean | null; status: string; attempts: number; rows: number }[]
      )[0];
    try {
      const [first, second] = await emitMany(t, appId, 2, 'lease');
      const slowDone = slow.deliverAll([first, second]);
      await pollUntil('the slow worker to claim both', async () => (await leaseOf(second)).held === true);
      await pollUntil(
        'the second event free to claim',
        async () => (await leaseOf(second)).held !== true,
        10_000,
        10,
      );
      const whenFree = await leaseOf(second);
      expect(await other.deliver(second)).toBe('delivered');
      const slowOutcomes = await slowDone;

      // No event was ever POSTed while an earlier POST of it was unanswered; each went out once.
      for (const id of [first, second]) {
        const posts = receiver.attemptsOf(id);
        for (const [n, post] of posts.entries()) {
          for (const later of posts.slice(n + 1)) {
            expect(later.receivedAt).toBeGreaterThanOrEqual(post.answeredAt ?? Number.POSITIVE_INFINITY);
          }
        }
      }
      // The slow worker gave its claim back unsent, with no attempt counted or recorded.
      expect(slowOutcomes).toEqual({ delivered: 1, skipped: 1 });
      expect(whenFree).toEqual({ held: null, status: 'pending', attempts: 0, rows: 0 });
      await expectAllDeliveredOnce(t, receiver, [first, second]);
      expect(receiver.requests).toHaveLength(2);
      for (const id of [first, second]) {
        expect(await leaseOf(id)).toEqual({ held: null, status: 'delivered', attempts: 1, rows: 1 });
      }
    } finally {
      await Promise.all(
        [slow, other].flatMap((delivery) => [delivery['sender'].close(), delivery['signer'].close()]),
      );
    }
  }, 60_000);

  it('gives a claim back uncounted when signing fails, and delivers it once signing works again', async () => {
    const t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ...isolatedRedisEnv(15) } });
    apps.push(t);
    const receiver = await receiverFor(() => ({ status: 200 }));
    const { appId } = await registerClient(t.app, 'signing fails');
    await t.app.get(AppsService).setWebhook(appId, receiver.url(), cliActor('test'));
    const delivery = await deliveryService(t);
    const stateOf = async (id: string) =>
      (
        (await t.dataSource.query(
          `SELECT lease_until IS NOT NULL AS leased, status, attempts FROM webhook_events WHERE id = $1`,
          [id],
        )) as { leased: boolean; status: string; attempts: number }[]
      )[0];
    const keysFile = t.config.signingKeysFile;
    try {
      const [id] = await emitMany(t, appId, 1, 'unsigned');
      // The key file gone (a broken volume, a bad deploy): the next periodic read, a second later, fails.
      renameSync(keysFile, `${keysFile}.away`);
      await sleep(1_100);
      await expect(delivery.deliver(id)).rejects.toThrow();
      expect(await stateOf(id)).toEqual({ leased: false, status: 'pending', attempts: 0 });
      expect(receiver.requests).toHaveLength(0);

      renameSync(`${keysFile}.away`, keysFile);
      await sleep(1_100);
      expect(await delivery.deliver(id)).toBe('delivered');
      expect(await stateOf(id)).toEqual({ leased: false, status: 'delivered', attempts: 1 });
      expect(receiver.attemptsOf(id)).toHaveLength(1);
    } finally {
      if (existsSync(`${keysFile}.away`)) renameSync(`${keysFile}.away`, keysFile);
      await Promise.all([delivery['sender'].close(), delivery['signer'].close()]);
    }
  }, 60_000);

  it("shows in the feed's lastAttemptAt only attempts made: claims given back (signing failed) or postponed (the origin's turn) leave it as it was, an attempt sets it to its start", async () => {
    // No worker in this process: two delivery services of the real code, on the real database and a real receiver.
    // The receiver answers E's first request 500 and its later ones 200, and never answers the holder (H): while
    // H's POST hangs, a service with one POST slot and no claim waiting per origin gives E's claim back for a later
    // turn (decision 0079).
    const t = await startTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        WEBHOOK_RETRY_DELAYS: '100ms,100ms,100ms',
        ...isolatedRedisEnv(15),
      },
    });
    apps.push(t);
    const receiver = await receiverFor((req, self) =>
      self.attemptsOf(req.id).length > 1 ? { status: 200 } : { status: 500 },
    );
    const client = await registerClient(t.app, 'last attempt');
    await t.app.get(AppsService).setWebhook(client.appId, receiver.url(), cliActor('test'));
    const auth = `Bearer ${await accessToken(t.http, client)}`;
    const delivery = await deliveryService(t);
    const oneSlot = await deliveryService(t, {
      postsPerOrigin: 1,
      waitingPerOrigin: 0,
      shortWaitMs: 100,
      laterMaxMs: 300,
    });
    /** The feed's delivery of the event, and the start of each attempt row (ISO, as the feed writes instants). */
    const shown = async (id: string) => {
      const response = await request(t.http).get(`/v1/events/${id}`).set('Authorization', auth);
      expect(response.status).toBe(200);
      const starts = (
        (await t.dataSource.query(
          `SELECT started_at FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt, started_at`,
          [id],
        )) as { started_at: Date }[]
      ).map((row) => row.started_at.toISOString());
      const { delivery: shownDelivery } = response.body as { delivery: Record<string, unknown> };
      return { attempts: shownDelivery.attempts, lastAttemptAt: shownDelivery.lastAttemptAt, starts };
    };
    const due = (id: string) =>
      pollUntil('the event due again', async () => {
        const [row] = (await t.dataSource.query(
          `SELECT next_attempt_at <= now() AS due FROM webhook_events WHERE id = $1`,
          [id],
        )) as { due: boolean }[];
        return row.due;
      });
    const keysFile = t.config.signingKeysFile;
    const signingFails = async () => {
      renameSync(keysFile, `${keysFile}.away`);
      await sleep(1_100); // the next periodic read of the key file, a second later, fails
    };
    const signingWorks = async () => {
      renameSync(`${keysFile}.away`, keysFile);
      await sleep(1_100);
    };
    try {
      const [event] = await emitMany(t, client.appId, 1, 'last attempt');

      // Given back unsent (signing failed): no attempt made, none shown.
      await signingFails();
      await expect(delivery.deliver(event)).rejects.toThrow();
      expect(await shown(event)).toEqual({ attempts: 0, lastAttemptAt: null, starts: [] });

      // A real attempt (answered 500): shown with its start, as its attempts row has it.
      await signingWorks();
      expect(await delivery.deliver(event)).toBe('retrying');
      const [first] = (await shown(event)).starts;
      expect(await shown(event)).toEqual({ attempts: 1, lastAttemptAt: first, starts: [first] });

      // Postponed for the origin's turn while the holder's POST hangs: still that attempt.
      const [holder] = await emitMany(t, client.appId, 1, 'holder');
      receiver.responder = (req, self) =>
        req.id === holder ? 'hang' : self.attemptsOf(req.id).length > 1 ? { status: 200 } : { status: 500 };
      const holding = oneSlot.deliver(holder);
      await pollUntil('the holder POSTed', () => receiver.attemptsOf(holder).length === 1);
      await due(event);
      expect(await oneSlot.deliver(event)).toBe('skipped');
      expect(receiver.attemptsOf(event)).toHaveLength(1);
      expect(await shown(event)).toEqual({ attempts: 1, lastAttemptAt: first, starts: [first] });

      // Given back after that attempt (signing failed again): still that attempt.
      await due(event);
      await signingFails();
      await expect(delivery.deliver(event)).rejects.toThrow();
      expect(await shown(event)).toEqual({ attempts: 1, lastAttemptAt: first, starts: [first] });

      // The next attempt made (acknowledged): shown with its own start.
      await signingWorks();
      expect(await delivery.deliver(event)).toBe('delivered');
      const { starts } = await shown(event);
      expect(starts).toHaveLength(2);
      expect(await shown(event)).toEqual({
        attempts: 2,
        lastAttemptAt: starts[1],
        starts: [first, starts[1]],
      });
      expect(receiver.attemptsOf(event)).toHaveLength(2);

      receiver.recover(() => ({ status: 200 })); // the holder's hanging POST ends
      await holding;
    } finally {
      if (existsSync(`${keysFile}.away`)) renameSync(`${keysFile}.away`, keysFile);
      await Promise.all(
        [delivery, oneSlot].flatMap((service) => [service['sender'].close(), service['signer'].close()]),
      );
    }
  }, 60_000);

  /**
   * The queue loses jobs it holds (flushed Redis, deleted jobs): three events are in flight at a slow
   * receiver and seven wait in the paused queue when every job is deleted. The sweeper enqueues
   * again what the outbox still has pending.
   */
  async function flushedQueueLosesNothing(t: TestApp, label: string): Promise<void> {
    const receiver = await receiverFor(() => ({ status: 200, delayMs: 500 }));
    const { appId } = await registerClient(t.app, label);
    await t.app.get(AppsService).setWebhook(appId, receiver.url(), cliActor('test'));
    const queue = t.app.get(QueueFactory).queue(QUEUES.webhooks);

    const inFlight = await emitMany(t, appId, 3, 'in flight');
    await pollUntil('three requests in flight', () => receiver.requests.length === 3);
    await queue.pause(); // the next jobs stay queued until the flush
    const queued = await emitMany(t, appId, 7, 'queued');
    await pollUntil('the relay to queue the seven events', async () => {
      // A paused queue reports its waiting jobs as 'paused': a state BullMQ accepts but leaves out of JobType.
      // The relay puts fresh events in batch jobs ({events}); a retry or a sweep is a job of one ({eventId}).
      const waiting = ['wait', 'paused', 'prioritized'] as JobType[];
      const jobs = await queue.getJobs(waiting);
      const events = jobs.flatMap((job) => {
        const data = job.data as { events?: string[]; eventId?: string };
        return data.events ?? (data.eventId ? [data.eventId] : []);
      });
      return queued.every((id) => events.includes(id));
    });
    await queue.obliterate({ force: true });
    const left = await queue.getJobCounts();
    expect(Object.values(left).reduce((sum, n) => sum + n, 0)).toBe(0);
    await queue.resume();

    const ids = [...inFlight, ...queued];
    await pollUntil('all ten events acknowledged', allAcknowledged(receiver, ids), 40_000);
    await expectAllDeliveredOnce(t, receiver, ids);
  }

  it('delivers events written while Redis was down, and after the queue lost its jobs (both backends)', async () => {
    if (backend === 'redis') {
      // A Redis of this test's own, so that it can be stopped and started again (empty).
      const port = await freePort();
      let redis = await startRedis(port);
      const t = await startTestApp({
        runWorker: true,
        env: { ...FAST, REDIS_URL: `redis://127.0.0.1:${port}` },
      });
      apps.push(t);
      const receiver = await receiverFor();
      const { appId } = await registerClient(t.app, 'redis down');
      await t.app.get(AppsService).setWebhook(appId, receiver.url(), cliActor('test'));
      const [before] = await emitMany(t, appId, 1, 'before');
      await pollUntil('the event sent before the outage', allAcknowledged(receiver, [before]));

      // The factory's queues report the outage (without a listener BullMQ prints each error to the console).
      const queueErrors: Error[] = [];
      const factory = t.app.get(QueueFactory);
      for (const name of Object.values(QUEUES))
        factory.queue(name).on('error', (error) => queueErrors.push(error));
      expect(await stop(redis, 'SIGTERM')).toMatchObject({ code: 0 });
      const during = await emitMany(t, appId, 10, 'during'); // PostgreSQL takes them; the queue cannot
      await sleep(1_000); // several sweeps come and go without a queue
      const pending = (await t.dataSource.query(
        `SELECT count(*)::int AS n FROM webhook_events WHERE id = ANY($1) AND status = 'pending'`,
        [during],
      )) as { n: number }[];
      expect(pending).toEqual([{ n: 10 }]);
      expect(receiver.requests.map((req) => req.id)).toEqual([before]);
      expect(queueErrors.some((error) => /ECONNREFUSED|Connection is closed/.test(error.message))).toBe(true);

      redis = await startRedis(port); // same port, nothing in it
      await pollUntil('the ten events written during the outage', allAcknowledged(receiver, during), 40_000);
      await expectAllDeliveredOnce(t, receiver, [before, ...during]);

      // Redis is back; now it loses the jobs it holds.
      await flushedQueueLosesNothing(t, 'flushed redis');
      await t.close();
      apps.splice(apps.indexOf(t), 1);
      expect(await stop(redis, 'SIGTERM')).toMatchObject({ code: 0 });
    } else {
      // The queue lives in the outbox's own database here: it cannot be down while events are written,
      // but its jobs can be lost.
      const t = await startTestApp({ runWorker: true, env: FAST });
      apps.push(t);
      await flushedQueueLosesNothing(t, 'flushed queue');
    }
  }, 120_000);

  it('delivers in embedded mode through the API process alone (no DATABASE_URL, no REDIS_URL)', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-webhooks-embedded-'));
    chmodSync(dataDir, 0o755); // the server runs as the postgres user when we are root
    const clusterDir = path.join(dataDir, 'postgres');
    const postmasters = () => postmastersOf(clusterDir);
    try {
      const keyFile = path.join(dataDir, 'client-key.pem');
      writeFileSync(keyFile, freshKeyPair().publicPem);
      const receiver = await receiverFor();
      const port = await freePort();
      const env = childEnv({
        DATA_DIR: dataDir,
        PORT: String(port),
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        LOG_LEVEL: 'info',
      });

      const api = start(process.execPath, [MAIN_JS], env);
      await waitForOutput(api, '"msg":"API listening"', 45_000);

      const created = await runNode(
        CLI_JS,
        ['apps', 'create', '--name', 'embedded', '--public-key', keyFile, '--webhook-url', receiver.url()],
        env,
      );
      expect(created.code).toBe(0);
      const { appId } = JSON.parse(created.stdout) as { appId: string };
      const sent = await runNode(CLI_JS, ['webhooks', 'send-test', '--app-id', appId], env);
      expect(sent.code).toBe(0);
      const body = JSON.parse(sent.stdout) as { eventId: string };
      expect(body).toEqual({ eventId: expect.any(String) });

      await pollUntil('the test webhook', () => receiver.acknowledged(body.eventId).length === 1, 20_000);
      const [received] = receiver.requests;
      expect(receiver.requests).toHaveLength(1);
      expect(received.headers['webhook-id']).toBe(body.eventId);
      const jwks = (await (
        await fetch(`http://127.0.0.1:${port}/v1/.well-known/jwks.json`)
      ).json()) as JSONWebKeySet;
      const { payload } = await verifyWebhook(received.body, jwks);
      expect(payload).toEqual({
        event: 'webhook_test',
        timestamp: expect.any(Number),
        data: { message: expect.any(String) },
      });

      // The API records the outcome once the answer reaches it, a moment after the receiver sent it.
      let listed = await runNode(CLI_JS, ['webhooks', 'list', '--app-id', appId], env);
      for (
        let tries = 0;
        tries < 10 && listed.code === 0 && !listed.stdout.includes('"delivered"');
        tries++
      ) {
        await sleep(200);
        listed = await runNode(CLI_JS, ['webhooks', 'list', '--app-id', appId], env);
      }
      expect(listed.code).toBe(0);
      expect(JSON.parse(listed.stdout)).toEqual([
        expect.objectContaining({ eventId: body.eventId, status: 'delivered', attempts: 1 }),
      ]);

      const serverPids = postmasters();
      expect(serverPids).toHaveLength(1);
      expect(await stop(api, 'SIGTERM')).toEqual({ code: 0, signal: null });
      expect(await waitFor(() => postmasters().length === 0, 10_000)).toBe(true);
    } finally {
      for (const pid of postmasters()) process.kill(pid, 'SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
