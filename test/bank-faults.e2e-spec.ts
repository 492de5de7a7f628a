import pg from 'pg';
import { accessToken, registerClient } from './support/auth.js';
import {
  Bank,
  backend,
  FAULT_OPS,
  generateOps,
  kill,
  PLAIN_OPS,
  Rng,
  SEED,
  started,
  startProcess,
  startRedis,
  waitForOutput,
  withSeed,
  WORKER_JS,
  type Party,
  type Running,
} from './support/bank.js';
import { childEnv, freePort, isProcessRunning, waitFor } from './support/processes.js';
import { startTestApp, type TestApp } from './support/test-app.js';
/**
 * The bank invariant under a seeded random workload (issue 9, suite 1).
 *
 * Eight funded accounts of two applications, and random concurrent operations through the HTTP API:
 * internal transfers (also across applications), external WITHDRAWs to every verdict of the clearing
 * simulator (the directory's test accounts that force each failure status; listed accounts and a CBU and a
 * CVU it does not list, which settle ACREDITADO like any valid number), external DEPOSITs,
 * over-balance attempts, amounts 0 / 0.001 / 1, replayed and conflicting Idempotency-Keys, racing
 * duplicates and balance reads. At every balance read and at the end: money is conserved, no wallet is
 * negative, every system account holds exactly what the transfers table says it should, and
 * `ledger verify` passes. At the end, with every transfer final: each account's balance equals the
 * balance computed by this test from the answers it got (each accepted transfer counted exactly once),
 * every final external transfer and every internal DEPOSIT has its one transfer_update event.
 *
 * The second test runs the same workload while database connections are terminated in a loop, the
 * worker process is killed and restarted, Redis (on that backend) is stopped and started, and client
 * requests are aborted after a few milliseconds and retried with the same key.
 *
 * BANK_SEED replays a run's operations (the interleaving of concurrent requests is not replayed);
 * BANK_OPS sets how many operations each test runs.
 */

// ---- the tests ----

describe(`bank invariant under a seeded random workload (${backend} queue backend, seed ${SEED})`, () => {
  const apps: TestApp[] = [];

  afterEach(async () => {
    for (const child of started)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const app of apps.splice(0)) await app.close();
  });

  afterAll(async () => {
    const gone = await waitFor(
      () => started.every((child) => child.pid === undefined || !isProcessRunning(child.pid)),
      10_000,
    );
    expect(gone).toBe(true);
  });

  const parties = async (t: TestApp): Promise<Party[]> => {
    const result: Party[] = [];
    for (const name of ['bank-a', 'bank-b']) {
      const client = await registerClient(t.app, name);
      result.push({ client, token: await accessToken(t.http, client) });
    }
    return result;
  };

  it(
    `${PLAIN_OPS} random concurrent operations: money conserved, nothing negative, every transfer once, final, announced`,
    () =>
      withSeed(async () => {
        const t = await startTestApp({
          runWorker: true,
          env: { CLEARING_SIM_DELAY_MS: '50', TRANSFER_TAX_RATE: '0.006' },
        });
        apps.push(t);
        const bank = new Bank(t, { faults: false, abortChance: 0 }, SEED);
        await bank.setUp(await parties(t));
        await bank.checkInvariant('after funding');
        const ops = generateOps(SEED, PLAIN_OPS, bank.accounts.length, false);
        await bank.run(ops);
        bank.assertClean('during the workload');

        const pending = await waitFor(async () => (await bank.inFlight()).length === 0, 30_000, 100);
        if (!pending) bank.violation(`not final after 30 s: ${JSON.stringify(await bank.inFlight())}`);
        await bank.checkFinal();
        await bank.verifyLedgerByCli();
        bank.assertClean('at the end');
        expect(bank.stats.accepted).toBeGreaterThan(PLAIN_OPS / 4);
        expect(bank.stats.invariantChecks).toBeGreaterThan(2);
        console.log(bank.summary('bank invariant, no faults'));
      }),
    120_000,
  );

  it(
    `${FAULT_OPS} operations while connections are terminated, the worker killed${
      backend === 'redis' ? ', Redis restarted' : ''
    } and requests aborted: the same invariant`,
    () =>
      withSeed(async () => {
        let redisPort: number | undefined;
        let redis: Running | undefined;
        if (backend === 'redis') {
          redisPort = await freePort();
          redis = await startRedis(redisPort);
        }
        const redisEnv: Record<string, string> = redisPort
          ? { REDIS_URL: `redis://127.0.0.1:${redisPort}` }
          : {};
        const env = { CLEARING_SIM_DELAY_MS: '50', TRANSFER_TAX_RATE: '0.006', ...redisEnv };
        const t = await startTestApp({ runWorker: false, env });
        apps.push(t);
        const bank = new Bank(t, { faults: true, abortChance: 0.25 }, SEED);
        await bank.setUp(await parties(t));
        await bank.checkInvariant('after funding');

        const workerEnv = childEnv({
          ...env,
          DATABASE_URL: t.databaseUrl,
          DATA_DIR: t.dataDir,
          QUEUE_PREFIX: t.config.queuePrefix,
          DATABASE_POOL_SIZE: '4',
          LOG_LEVEL: 'info',
        });
        let worker = startProcess(process.execPath, [WORKER_JS], workerEnv);
        await waitForOutput(worker, '"msg":"worker running"');
        const count = (name: string, n = 1) => (bank.stats.faults[name] = (bank.stats.faults[name] ?? 0) + n);
        const crashes: string[] = [];
        /** Kills the worker (if still alive) and starts another; a start cut short by a fault is tried again. */
        const restartWorker = async () => {
          if (worker.child.exitCode !== null || worker.child.signalCode !== null) {
            count('workerExitedByItself');
            crashes.push(worker.output().slice(-1500));
          }
          await kill(worker);
          for (let attempt = 0; ; attempt++) {
            worker = startProcess(process.execPath, [WORKER_JS], workerEnv);
            try {
              await waitForOutput(worker, '"msg":"worker running"', 45_000);
              return;
            } catch (error) {
              count('workerStartFailed');
              crashes.push(worker.output().slice(-1500));
              await kill(worker);
              if (attempt >= 5) throw error;
            }
          }
        };

        // The faults, each in a loop of its own until the workload ends.
        const faultRng = new Rng(SEED ^ 0x1234567);
        let running = true;
        const pause = (ms: number) => waitFor(() => !running, ms, 25);
        const killer = new pg.Client({ connectionString: t.databaseUrl });
        await killer.connect();
        const terminate = (async () => {
          while (running) {
            await pause(faultRng.int(150, 600));
            if (!running) break;
            const result = await killer.query(
              `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()`,
            );
            count('connectionsTerminated', result.rows.filter((r: { done: boolean }) => r.done).length);
            count('terminationRounds');
          }
        })();
        // The first of each fault comes early, so that even a fast workload meets every fault at least once.
        const workerFaults = (async () => {
          for (let round = 0; running; round++) {
            await pause(round === 0 ? faultRng.int(300, 800) : faultRng.int(1_500, 3_000));
            if (!running) break;
            count('workerKilled');
            await restartWorker();
          }
        })();
        const redisFaults = (async () => {
          if (!redis || !redisPort) return;
          for (let round = 0; running; round++) {
            await pause(round === 0 ? faultRng.int(800, 1_500) : faultRng.int(4_000, 7_000));
            if (!running) break;
            await kill(redis);
            count('redisStopped');
            await pause(faultRng.int(300, 1_200)); // the outage lasts a while, whatever the workload does
            redis = await startRedis(redisPort);
          }
        })();
        const faultLoops = Promise.all([terminate, workerFaults, redisFaults]);

        const ops = generateOps(SEED, FAULT_OPS, bank.accounts.length, true);
        try {
          await bank.run(ops);
        } finally {
          running = false;
          await faultLoops;
          await killer.end();
        }
        bank.assertClean('during the workload');

        // Faults over: a healthy worker, and every transfer reaches a final status.
        if (redis && redisPort && (redis.child.exitCode !== null || redis.child.signalCode !== null))
          redis = await startRedis(redisPort);
        await restartWorker();
        let final = await waitFor(async () => (await bank.inFlight()).length === 0, 5_000, 100);
        if (!final) {
          // Jobs lost with Redis or with a killed worker wait for the recovery sweep (in flight for longer than
          // the delay + 30 s, checked at start and every 30 s). Let that time pass, then start a worker.
          const stuck = await bank.inFlight();
          bank.stats.recoveredBySweep = stuck.length;
          await bank.query(
            `UPDATE transfers SET updated_at = now() - interval '1 hour' WHERE status IN ('INICIADO', 'EN_CURSO')`,
          );
          await restartWorker();
          final = await waitFor(async () => (await bank.inFlight()).length === 0, 30_000, 100);
        }
        if (!final)
          bank.violation(`not final after the recovery sweep: ${JSON.stringify(await bank.inFlight())}`);
        await bank.checkFinal();
        bank.assertClean('at the end');
        expect(bank.stats.accepted).toBeGreaterThan(FAULT_OPS / 5);
        expect(bank.stats.faults.connectionsTerminated ?? 0).toBeGreaterThan(0);
        expect(bank.stats.faults.workerKilled ?? 0).toBeGreaterThan(0);
        expect(bank.stats.aborted).toBeGreaterThan(0);
        if (backend === 'redis') expect(bank.stats.faults.redisStopped ?? 0).toBeGreaterThan(0);
        console.log(
          `${bank.summary('bank invariant under faults')}${
            crashes.length > 0 ? `\nworker exits not caused by the test:\n${crashes.join('\n---\n')}` : ''
          }`,
        );
      }),
    180_000,
  );
});
