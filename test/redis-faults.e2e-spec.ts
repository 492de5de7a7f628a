import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Global, Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import request from 'supertest';
import { HAND_OVER_TIMEOUT_MS } from '../src/common/queue/hand-over.js';
import { JOBS, QUEUES } from '../src/common/queue/queue-names.js';
import { QueueFactory } from '../src/common/queue/queue.factory.js';
import { RECONNECT_SPREAD_MS, SCHEDULES_CHECK_PERIOD } from '../src/common/queue/worker-host.js';
import { accessToken, clientAssertion, registerClient } from './support/auth.js';
import { kill, startProcess, startRedis, waitForOutput, type Running } from './support/bank.js';
import { createTestDatabase } from './support/database.js';
import { bearer } from './support/identity.js';
import { childEnv, freePort, MAIN_JS, waitFor, WORKER_JS } from './support/processes.js';
import { startTestApp, TEST_BASE_URL, type TestApp, type TestAppOptions } from './support/test-app.js';
import { pollValue } from './support/poll.js';
import { DIRECTORY, postTransfer, transferBody, transferStatus } from './support/transfers.js';
import { createOwner, openAccount, setBalance } from './support/wallet.js';

const METRICS_TOKEN = 'operator-token-for-tests';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** A test app on a redis-server of its own (a free port), which a test stops and starts again (same port, empty). */
function onOwnRedis(options: TestAppOptions) {
  const state: { t?: TestApp; redis?: Running; port?: number } = {};
  beforeAll(async () => {
    state.port = await freePort();
    state.redis = await startRedis(state.port);
    state.t = await startTestApp({
      ...options,
      env: { ...options.env, REDIS_URL: `redis://127.0.0.1:${state.port}` },
    });
  });
  afterAll(async () => {
    await state.t?.close();
    if (state.redis) await kill(state.redis);
  });
  return {
    app: () => state.t!,
    url: () => `redis://127.0.0.1:${state.port}`,
    stopRedis: async () => {
      await kill(state.redis!);
      state.redis = undefined;
    },
    startRedis: async () => {
      state.redis = await startRedis(state.port!);
    },
  };
}

/**
 * Redis stopped while requests hand committed changes over to the queue (docs/decisions/0038): an external
 * transfer (the clearing rail's submit), an SMS (its submit job) and a KYC step (the provider's submit) are
 * answered at once (within the hand-over's deadline), not when Redis is back; and once it is back, with nothing
 * in it, each of them is processed. Its own redis-server on a free port (run by `npm run test:redis`, jest.config.js).
 */
describe('requests that hand over to the queue while Redis is down', () => {
  const own = onOwnRedis({
    runWorker: true,
    env: { CLEARING_SIM_DELAY_MS: '50', KYC_SIM_DELAY_MS: '50', SMS_SIM_DELIVERY_DELAY_MS: '50' },
  });

  it('answers each at once, and processes each once Redis is back', async () => {
    const t = own.app();
    const client = await registerClient(t.app, 'outage');
    const token = await accessToken(t.http, client);
    const auth = { Authorization: bearer(token) };
    const userId = await createOwner(t.http, token);
    const account = await openAccount(t.http, token, client.appId, userId);
    await setBalance(t.http, token, account.uuid, 1000);
    const document = await request(t.http)
      .post(`/v1/users/${userId}/documents`)
      .set(auth)
      .field('documentType', 'DNI_FRONT')
      .attach('file', PNG, 'front.png');
    expect(document.status).toBe(201);
    const session = await request(t.http)
      .post('/v1/kyc/sessions')
      .set(auth)
      .send({ ownerType: 'USER', ownerId: userId });
    expect(session.status).toBe(201);

    await own.stopRedis();

    const timed = async <T>(call: () => PromiseLike<T>): Promise<{ answer: T; ms: number }> => {
      const started = Date.now();
      const answer = await call();
      return { answer, ms: Date.now() - started };
    };
    const transfer = await timed(() =>
      postTransfer(t.http, token, transferBody(account.uuid, DIRECTORY.nacion.number, 100)),
    );
    const sms = await timed(() =>
      request(t.http).post('/v1/mobile/sms').set(auth).send({ dnis: '541123456789', message: 'Hola' }),
    );
    const step = await timed(() =>
      request(t.http)
        .post(`/v1/kyc/sessions/${session.body.uuid}/steps/DOCUMENT_FRONT`)
        .set(auth)
        .send({ documentUuid: document.body.uuid }),
    );
    // Answered with success after the hand-over's deadline at most, not held until Redis is back.
    expect([transfer.answer.status, sms.answer.status, step.answer.status]).toEqual([201, 200, 202]);
    for (const { ms } of [transfer, sms, step]) expect(ms).toBeLessThan(HAND_OVER_TIMEOUT_MS + 2_000);
    expect(transfer.answer.body.status).toBe('INICIADO');

    // Redis back on the same port, empty: the jobs handed over late (or again by the sweeps) run.
    await own.startRedis();
    const transferId = transfer.answer.body.uuid as string;
    const smsId = sms.answer.body.message_id as string;
    const settled = await pollValue(
      async () => {
        const [message] = (await t.dataSource.query('SELECT status FROM sms_messages WHERE id = $1', [
          smsId,
        ])) as { status: string }[];
        const [kycStep] = (await t.dataSource.query(
          `SELECT status FROM kyc_session_steps WHERE session_id = $1 AND step = 'DOCUMENT_FRONT'`,
          [session.body.uuid],
        )) as { status: string }[];
        return {
          transfer: await transferStatus(t.dataSource, transferId),
          sms: message.status,
          kyc: kycStep.status,
        };
      },
      (state) => state.transfer === 'ACREDITADO' && state.sms === 'DELIVRD' && state.kyc === 'SUCCESS',
      30_000,
    );
    expect(settled).toEqual({ transfer: 'ACREDITADO', sms: 'DELIVRD', kyc: 'SUCCESS' });
  }, 90_000);
});

/**
 * The token endpoint's rate limit counts in Redis when the deployment has one (decision 0033). While Redis is
 * down it counts in the process (decision 0038): tokens are still issued, and still limited.
 */
describe('the token rate limit while Redis is down', () => {
  const LIMIT = 4;
  const own = onOwnRedis({ env: { TOKEN_RATE_LIMIT_PER_MINUTE: String(LIMIT), METRICS_TOKEN } });

  it('issues tokens within the limit and refuses the one past it, answering at once; then counts in Redis again', async () => {
    const t = own.app();
    const client = await registerClient(t.app, 'outage-tokens');
    const token = async () => {
      const started = Date.now();
      const response = await request(t.http)
        .post('/v1/oauth/app/token')
        .send({ appId: client.appId, token: await clientAssertion(client), grantType: 'client_credentials' });
      return { status: response.status, ms: Date.now() - started };
    };
    expect((await token()).status).toBe(200); // counted in Redis
    await own.stopRedis();
    const answers = [];
    for (let i = 0; i <= LIMIT; i++) answers.push(await token());
    expect(answers.map((answer) => answer.status)).toEqual([...Array(LIMIT).fill(200), 429]);
    for (const { ms } of answers) expect(ms).toBeLessThan(2_000);

    // Redis back, empty: the shared count takes over again (this process's own is past the limit, and would
    // refuse).
    await own.startRedis();
    let after = await token();
    for (let tries = 0; after.status !== 200 && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      after = await token();
    }
    expect(after.status).toBe(200);
  });

  it('serves the metrics without the queue gauge, and says not ready, at once; the gauge is back with Redis', async () => {
    const t = own.app();
    const metrics = async () => {
      const started = Date.now();
      const response = await request(t.http)
        .get('/v1/metrics')
        .set('Authorization', `Bearer ${METRICS_TOKEN}`);
      return { status: response.status, text: response.text, ms: Date.now() - started };
    };
    expect((await metrics()).text).toContain('webhook_queue_jobs{state="waiting"}');
    await own.stopRedis();
    const down = await metrics();
    expect(down.status).toBe(200);
    expect(down.ms).toBeLessThan(3_000);
    expect(down.text).toContain('webhook_events{status="pending"}'); // read from PostgreSQL
    expect(down.text).not.toContain('webhook_queue_jobs{');
    const ready = await request(t.http).get('/v1/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.headers['retry-after']).toBe('1'); // as every 503, and as the OpenAPI document says
    // The public answer says which check is down and how, never the driver's words (hosts, ports, users).
    expect(ready.body.detail.checks.redis).toEqual({
      status: 'down',
      message: expect.stringMatching(
        /^(timed out after 2000 ms|failed \(the reason is in the service log\))$/,
      ),
    });
    expect(JSON.stringify(ready.body)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|:\d{4,5}/);

    await own.startRedis();
    let back = await metrics();
    for (let tries = 0; !back.text.includes('webhook_queue_jobs{') && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      back = await metrics();
    }
    expect(back.text).toContain('webhook_queue_jobs{state="waiting"}');
  });
});

/**
 * A process with the workers (the API on the embedded database) started while Redis is down: the recurring jobs'
 * registration and the webhook sweep wait for Redis in the background, so the start completes and HTTP is
 * served (live, not ready) at once; when Redis comes up the recurring jobs are registered and it is ready.
 */
describe('an application with its workers started while Redis is down', () => {
  it('starts and serves at once, and registers its recurring jobs once Redis is up', async () => {
    const port = await freePort(); // nothing listens there yet
    // Before, the start waited for Redis in the workers' bootstrap (for ever: the connection retries).
    const t = await startTestApp({ runWorker: true, env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
    let redis: Running | undefined;
    try {
      expect((await request(t.http).get('/v1/health/live')).status).toBe(200);
      expect((await request(t.http).get('/v1/health/ready')).status).toBe(503);
      const client = await registerClient(t.app, 'started-without-redis');
      expect(await accessToken(t.http, client)).toMatch(/^ey/); // a token, while Redis is down

      redis = await startRedis(port);
      const maintenance = t.app.get(QueueFactory).queue(QUEUES.maintenance);
      const registered = await pollValue(
        async () => ({
          scheduler: Boolean(await maintenance.getJobScheduler(JOBS.pruneUsedAssertions)),
          ready: (await request(t.http).get('/v1/health/ready')).status,
        }),
        (state) => state.scheduler && state.ready === 200,
        30_000,
      );
      expect(registered).toEqual({ scheduler: true, ready: 200 });
    } finally {
      await t.close();
      if (redis) await kill(redis);
    }
  }, 90_000);
});

/** The worker's recurring jobs, by scheduler id, and the queue each is on. */
const RECURRING = [
  { queue: QUEUES.maintenance, id: JOBS.pruneUsedAssertions },
  { queue: QUEUES.events, id: JOBS.pruneEvents },
  { queue: QUEUES.documents, id: JOBS.reapDocuments },
] as const;

/** Each recurring job's next run (undefined: no scheduler), in RECURRING's order. */
async function schedulers(t: TestApp): Promise<(number | undefined)[]> {
  const factory = t.app.get(QueueFactory);
  return Promise.all(
    RECURRING.map(
      async ({ queue, id }) => (await factory.queue(queue).getJobScheduler(id))?.next ?? undefined,
    ),
  );
}

/** An expired client-assertion id: the used-assertions pruner's next run deletes it. */
async function expiredAssertion(t: TestApp): Promise<() => Promise<boolean>> {
  const jti = randomUUID();
  await t.dataSource.query(
    `INSERT INTO used_assertions (app_id, jti, expires_at) VALUES ($1, $2, now() - interval '1 hour')`,
    [randomUUID(), jti],
  );
  return async () =>
    ((await t.dataSource.query('SELECT 1 FROM used_assertions WHERE jti = $1', [jti])) as unknown[])
      .length === 0;
}

/**
 * Waits until every recurring job has its scheduler, each first run (at once on registering) under way (its next
 * one minutes away), and the used-assertions pruner's done: a later pruning is the work of a later run.
 */
async function registered(t: TestApp): Promise<(number | undefined)[]> {
  const maintenance = t.app.get(QueueFactory).queue(QUEUES.maintenance);
  const state = await pollValue(
    async () => ({
      next: await schedulers(t),
      pruned: (await maintenance.getJobs(['completed'])).some((job) => job.name === JOBS.pruneUsedAssertions),
    }),
    ({ next, pruned }) => pruned && next.every((at) => at !== undefined && at > Date.now() + 60_000),
    20_000,
  );
  expect(state.pruned && state.next.every(Boolean)).toBe(true);
  return state.next;
}

/** Within `boundMs`, every scheduler is back and the pruner has deleted the expired assertion. */
async function expectBack(t: TestApp, pruned: () => Promise<boolean>, boundMs: number): Promise<void> {
  const back = await pollValue(
    async () => ({ schedulers: (await schedulers(t)).map(Boolean), pruned: await pruned() }),
    (state) => state.schedulers.every(Boolean) && state.pruned,
    boundMs,
  );
  expect(back).toEqual({ schedulers: [true, true, true], pruned: true });
}

/**
 * The worker registers its recurring jobs (the used-assertions and events pruners, the document reaper) in Redis
 * at start. A Redis that comes back empty (restarted without persistence, failed over to a replica that lagged,
 * flushed) had them gone until the worker restarted: nothing pruned, nothing reaped. The worker registers them
 * again after each reconnect and now and then, without moving a run (decision 0090).
 */
describe('recurring jobs after Redis lost them', () => {
  describe('Redis restarted empty', () => {
    const own = onOwnRedis({ runWorker: true });

    it('registers them again once Redis is back, and the pruner runs', async () => {
      const t = own.app();
      await registered(t);

      await own.stopRedis();
      const pruned = await expiredAssertion(t);
      await own.startRedis();
      // The reconnect (ioredis waits at most 2 s between tries), the spread, and the writes.
      await expectBack(t, pruned, 2_000 + RECONNECT_SPREAD_MS + 5_000);
    }, 60_000);
  });

  describe('Redis flushed under a connected worker', () => {
    const CHECK_MS = 1_000;
    @Global()
    @Module({
      providers: [{ provide: SCHEDULES_CHECK_PERIOD, useValue: CHECK_MS }],
      exports: [SCHEDULES_CHECK_PERIOD],
    })
    class ShortCheck {}
    const own = onOwnRedis({ runWorker: true, extraModules: [ShortCheck] });

    it('registering again moves no run and adds no job', async () => {
      const t = own.app();
      // The first runs done, then several checks.
      const settled = await registered(t);
      await new Promise((resolve) => setTimeout(resolve, 4 * CHECK_MS));
      expect(await schedulers(t)).toEqual(settled);
      const factory = t.app.get(QueueFactory);
      for (const { queue, id } of RECURRING) {
        const delayed = await factory.queue(queue).getJobs(['delayed', 'wait']);
        expect(delayed.filter((job) => job.name === id)).toHaveLength(1);
      }
    }, 60_000);

    it('registers them again within the check period, and the pruner runs', async () => {
      const t = own.app();
      await registered(t);
      const pruned = await expiredAssertion(t);
      expect(await pruned()).toBe(false); // the pruner's next run is minutes away

      const admin = new Redis(own.url(), { maxRetriesPerRequest: 1 });
      try {
        await admin.flushall();
      } finally {
        admin.disconnect();
      }
      await expectBack(t, pruned, 1.5 * CHECK_MS + 5_000);
    }, 60_000);
  });
});

/**
 * SIGTERM to the API and to a worker (`node dist/src/…`, DATABASE_URL and REDIS_URL on a redis-server of their
 * own) after Redis stopped (decision 0102): closing the queues and the consumers no longer waits for a Redis that
 * does not come back (before, 25 s and `shutdown timed out`, exit 1). Each exits 0 within seconds, and a line says
 * what was not closed gracefully.
 */
describe('SIGTERM while Redis is down', () => {
  it('the API and a worker exit 0 within seconds, saying what was closed without Redis', async () => {
    const database = await createTestDatabase();
    const redisPort = await freePort();
    let redis: Running | undefined = await startRedis(redisPort);
    const apiPort = await freePort();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-redis-stop-'));
    const env = childEnv({
      DATABASE_URL: database.url,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      DATA_DIR: dataDir,
      PUBLIC_BASE_URL: TEST_BASE_URL,
      LOG_LEVEL: 'info',
      METRICS_TOKEN,
    });
    const api = startProcess(process.execPath, [MAIN_JS], { ...env, PORT: String(apiPort) });
    const worker = startProcess(process.execPath, [WORKER_JS], env);
    try {
      await Promise.all([
        waitForOutput(api, '"msg":"API listening"', 45_000),
        waitForOutput(worker, '"msg":"worker running"', 45_000),
      ]);
      // The API's queue connection is up (readiness pings it) and it has a queue open (the metrics' gauge reads
      // the webhooks queue); the worker's consumers are connected.
      expect(
        await waitFor(
          async () => (await fetch(`http://127.0.0.1:${apiPort}/v1/health/ready`)).status === 200,
          10_000,
        ),
      ).toBe(true);
      const metrics = await fetch(`http://127.0.0.1:${apiPort}/v1/metrics`, {
        headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
      });
      expect(await metrics.text()).toContain('webhook_queue_jobs{state="waiting"}');
      await kill(redis);
      redis = undefined;
      await new Promise((resolve) => setTimeout(resolve, 500));

      const signalledAt = Date.now();
      const exits = [api, worker].map(
        (running) =>
          new Promise<{ code: number | null; seconds: number }>((resolve) => {
            running.child.once('exit', (code) =>
              resolve({ code, seconds: (Date.now() - signalledAt) / 1000 }),
            );
            running.child.kill('SIGTERM');
          }),
      );
      const [apiExit, workerExit] = await Promise.all(
        exits.map((exit) =>
          Promise.race([
            exit,
            new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 12_000).unref()),
          ]),
        ),
      );
      // Measured: the worker about 3.1 s (REDIS_CLOSE_WAIT_MS, then its consumers given up on), the API 0.1 s.
      for (const [running, exit] of [
        [api, apiExit],
        [worker, workerExit],
      ] as const) {
        expect({ code: exit?.code, timedOut: running.output().includes('shutdown timed out') }).toEqual({
          code: 0,
          timedOut: false,
        });
        expect(exit!.seconds).toBeLessThan(8);
        expect(running.output()).toContain('"msg":"stopped"');
      }
      const givenUp = worker
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"queue connections closed without Redis"'))
        .map((line) => JSON.parse(line) as { redis: string; workers: string[] });
      expect(givenUp).toEqual([
        expect.objectContaining({
          redis: `127.0.0.1:${redisPort}`,
          workers: expect.arrayContaining([QUEUES.clearing, QUEUES.webhooks]),
        }),
      ]);
    } finally {
      for (const running of [api, worker]) await kill(running);
      if (redis) await kill(redis);
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
