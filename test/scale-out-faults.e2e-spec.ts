import { Decimal } from 'decimal.js';
import pg from 'pg';
import request from 'supertest';
import { AppsService } from '../src/modules/apps/apps.service.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import { WEBHOOK_EVENTS } from '../src/modules/webhooks/webhook-events.js';
import { WebhooksService } from '../src/modules/webhooks/webhooks.service.js';
import { accessToken, clientAssertion, newKeyPair, subjectToken, type TestClient } from './support/auth.js';
import {
  Bank,
  backend,
  generateOps,
  kill,
  Rng,
  SEED,
  started,
  startProcess,
  waitForOutput,
  withSeed,
  WORKER_JS,
  type Party,
  type Running,
} from './support/bank.js';
import { bearer } from './support/identity.js';
import { childEnv, freePort, isProcessRunning, MAIN_JS, runCli, waitFor } from './support/processes.js';
import { startTestApp, TEST_BASE_URL, type TestApp } from './support/test-app.js';
import { transferBody } from './support/transfers.js';
import { createOwner, openAccount, setBalance, type AccountInfo } from './support/wallet.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

/**
 * Scale-out (issue 17): three API processes and two workers as real OS processes on one PostgreSQL (and, in
 * `npm run test:redis`, one Redis), clients spreading their requests over the three APIs in turn.
 *
 * 1. the seeded bank workload of bank-faults across all APIs: money conserved, nothing negative, `ledger
 *    verify` clean, each transfer settled once, each transfer_update acknowledged once per event id;
 * 2. the same while one API process is killed (SIGKILL) and restarted, one worker is killed and restarted and
 *    database connections are terminated; clients retry with their Idempotency-Keys;
 * 3. one Idempotency-Key sent to all three APIs at once: one transfer, identical answers;
 * 4. a hot account paying and paid (and its payees paying each other) from all three APIs at once: no
 *    deadlock (PostgreSQL's own count), no 5xx, balances exact, money conserved;
 * 5. webhook order per transfer kept with two workers;
 * 6. the token rate limit counted across the APIs; a key revoked through the CLI refused by every API
 *    within AUTH_CACHE_MS.
 * The tests run in order on one deployment (checks 3-6 after the bank's final check, which counts every
 * transfer in the database).
 */

const PLAIN_OPS = 100;
const FAULT_OPS = 120;
const AUTH_CACHE_MS = 1000;
const TOKEN_LIMIT = 20;
const REPLAY = `replay: BANK_SEED=${SEED}${backend === 'redis' ? ' TEST_QUEUE_BACKEND=redis' : ''} npm test -- --testPathPatterns scale-out`;

interface Api {
  port: number;
  origin: string;
  running: Running;
}

describe(`scale-out: 3 API processes and 2 workers (${backend} queue backend, seed ${SEED})`, () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let processEnv: NodeJS.ProcessEnv;
  const apis: Api[] = [];
  const workers: Running[] = [];
  let parties: Party[];
  let bank: Bank;

  const origins = () => apis.map((api) => api.origin);

  const startApi = async (port: number): Promise<Api> => {
    const running = startProcess(process.execPath, [MAIN_JS], { ...processEnv, PORT: String(port) });
    await waitForOutput(running, '"msg":"API listening"', 45_000);
    return { port, origin: `http://127.0.0.1:${port}`, running };
  };
  const startWorker = async (): Promise<Running> => {
    const running = startProcess(process.execPath, [WORKER_JS], processEnv);
    await waitForOutput(running, '"msg":"worker running"', 45_000);
    return running;
  };

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    const env = {
      CLEARING_SIM_DELAY_MS: '50',
      TRANSFER_TAX_RATE: '0.006',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      TOKEN_RATE_LIMIT_PER_MINUTE: String(TOKEN_LIMIT),
      AUTH_CACHE_MS: String(AUTH_CACHE_MS),
      WEBHOOK_RETRY_DELAYS: '300ms,600ms,1s',
    };
    t = await startTestApp({ runWorker: false, env });
    processEnv = childEnv({
      ...env,
      DATABASE_URL: t.databaseUrl,
      DATA_DIR: t.dataDir,
      QUEUE_PREFIX: t.config.queuePrefix,
      ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
      DATABASE_POOL_SIZE: '4',
      TRUST_PROXY: '1', // the test is the one proxy in front: its X-Forwarded-For is the address
      PUBLIC_BASE_URL: TEST_BASE_URL, // the issuer and audience of the tokens the test app issues
      LOG_LEVEL: 'info',
    });
    parties = [];
    for (const name of ['scale-a', 'scale-b']) {
      const key = newKeyPair();
      const created = await t.app
        .get(AppsService)
        .create({ name, publicKey: key.publicPem, webhookUrl: receiver.url() }, cliActor('test'));
      const client: TestClient = { appId: created.appId, keyId: created.keyId, key };
      parties.push({ client, token: await accessToken(t.http, client) });
    }
    const ports = [await freePort(), await freePort(), await freePort()];
    apis.push(...(await Promise.all(ports.map(startApi))));
    workers.push(await startWorker(), await startWorker());
  }, 120_000);

  afterAll(async () => {
    for (const child of started)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    const gone = await waitFor(
      () => started.every((child) => child.pid === undefined || !isProcessRunning(child.pid)),
      10_000,
    );
    await t?.close();
    await receiver?.close();
    expect(gone).toBe(true);
  });

  /** Every transfer_update event in the outbox, oldest first. */
  const transferEvents = () =>
    bank.query<{ id: string; subject: string }>(
      `SELECT id, subject FROM webhook_events WHERE event = 'transfer_update' ORDER BY seq`,
    );

  it(
    '1. the bank workload across three APIs: conserved, nothing negative, settled once, delivered once',
    () =>
      withSeed(async () => {
        bank = new Bank(t, { faults: false, abortChance: 0, targets: origins() }, SEED);
        await bank.setUp(parties);
        await bank.run(generateOps(SEED, PLAIN_OPS, bank.accounts.length, false));
        bank.assertClean('during the workload');
        const final = await waitFor(async () => (await bank.inFlight()).length === 0, 30_000, 100);
        if (!final) bank.violation(`not final after 30 s: ${JSON.stringify(await bank.inFlight())}`);
        await bank.checkFinal();
        await bank.verifyLedgerByCli();
        const events = await transferEvents();
        const delivered = await waitFor(
          () => events.every((event) => receiver.acknowledged(event.id).length > 0),
          30_000,
          100,
        );
        if (!delivered) bank.violation('not every transfer_update was acknowledged within 30 s');
        for (const event of events)
          if (receiver.acknowledged(event.id).length !== 1)
            bank.violation(`event ${event.id} acknowledged ${receiver.acknowledged(event.id).length} times`);
        bank.assertClean('at the end');
        expect(events.length).toBeGreaterThan(0);
        expect(bank.stats.accepted).toBeGreaterThan(PLAIN_OPS / 4);
        console.log(bank.summary('scale-out bank workload, no faults'));
      }, REPLAY),
    120_000,
  );

  it(
    '2. the same with an API and a worker killed and connections terminated: nothing lost, nothing doubled',
    () =>
      withSeed(async () => {
        bank.options.faults = true;
        bank.options.abortChance = 0.2;
        const rng = new Rng(SEED ^ 0x7f4a7c15);
        const count = (name: string, n = 1) => (bank.stats.faults[name] = (bank.stats.faults[name] ?? 0) + n);
        let running = true;
        const pause = (ms: number) => waitFor(() => !running, ms, 25);
        const killer = new pg.Client({ connectionString: t.databaseUrl });
        await killer.connect();
        const terminate = (async () => {
          while (running) {
            await pause(rng.int(300, 900));
            if (!running) break;
            const result = await killer.query(
              `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid()`,
            );
            count('connectionsTerminated', result.rows.filter((r: { done: boolean }) => r.done).length);
          }
        })();
        const processFaults = (async () => {
          await pause(rng.int(300, 800));
          const victim = apis[1];
          await kill(victim.running);
          count('apiKilled');
          await pause(rng.int(300, 1_000));
          apis[1] = await startApi(victim.port);
          await pause(rng.int(200, 600));
          await kill(workers[0]);
          count('workerKilled');
          workers[0] = await startWorker();
        })();
        try {
          await bank.run(generateOps(SEED + 1, FAULT_OPS, bank.accounts.length, true));
        } finally {
          running = false;
          await Promise.all([terminate, processFaults]);
          await killer.end();
        }
        bank.assertClean('during the workload');
        let final = await waitFor(async () => (await bank.inFlight()).length === 0, 10_000, 100);
        if (!final) {
          // Jobs lost with a killed worker wait for the recovery sweep: let its time pass, restart a worker.
          await bank.query(
            `UPDATE transfers SET updated_at = now() - interval '1 hour' WHERE status IN ('INICIADO', 'EN_CURSO')`,
          );
          await kill(workers[1]);
          workers[1] = await startWorker();
          final = await waitFor(async () => (await bank.inFlight()).length === 0, 30_000, 100);
        }
        if (!final)
          bank.violation(`not final after the recovery sweep: ${JSON.stringify(await bank.inFlight())}`);
        await bank.checkFinal();
        await bank.verifyLedgerByCli();
        const events = await transferEvents();
        const delivered = await waitFor(
          () => events.every((event) => receiver.acknowledged(event.id).length > 0),
          40_000,
          100,
        );
        if (!delivered)
          bank.violation(
            `never acknowledged: ${events.filter((event) => receiver.acknowledged(event.id).length === 0).length} events`,
          );
        bank.assertClean('at the end');
        expect(bank.stats.faults.apiKilled).toBe(1);
        expect(bank.stats.faults.workerKilled).toBe(1);
        expect(bank.stats.faults.connectionsTerminated ?? 0).toBeGreaterThan(0);
        console.log(bank.summary('scale-out bank workload under faults'));
      }, REPLAY),
    150_000,
  );

  /** A funded account of party 0 with no fee, and a payee; outside the bank's accounts. */
  const fundedPair = async (funding: number) => {
    const party = parties[0];
    const payer = await openAccount(
      t.http,
      party.token,
      party.client.appId,
      await createOwner(t.http, party.token, 'USER'),
      'USER',
    );
    const payee = await openAccount(
      t.http,
      party.token,
      party.client.appId,
      await createOwner(t.http, party.token, 'USER'),
      'USER',
    );
    await setBalance(t.http, party.token, payer.uuid, funding);
    return { party, payer, payee };
  };

  it('3. one Idempotency-Key sent to all three APIs at once: one transfer, identical answers', async () => {
    const { party, payer, payee } = await fundedPair(100);
    const body = transferBody(payer.uuid, payee.cvu, 7.31);
    const answers = await Promise.all(
      [...origins(), ...origins()].map((origin) =>
        request(origin)
          .post('/v1/wallet/transactions')
          .set('Authorization', bearer(party.token))
          .set('Idempotency-Key', `scale-same-key-${SEED}`)
          .send(body),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 201));
    const first = JSON.stringify(answers[0].body);
    for (const answer of answers) expect(JSON.stringify(answer.body)).toBe(first);
    const rows = await t.dataSource.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM transfers WHERE account_id = $1`,
      [payer.uuid],
    );
    expect(rows[0].n).toBe(1);
  }, 30_000);

  it('4. a hot account paying and paid from all three APIs at once: no deadlock, no 5xx, balances exact', async () => {
    const party = parties[0];
    const FUNDING = 1000;
    const PER_API = 300;
    const IN_FLIGHT = 4; // per API: its batcher groups what waits behind the call in flight
    const accounts: AccountInfo[] = [];
    for (let n = 0; n < 4; n++) {
      const owner = await createOwner(t.http, party.token, 'USER');
      const account = await openAccount(t.http, party.token, party.client.appId, owner, 'USER');
      await setBalance(t.http, party.token, account.uuid, FUNDING);
      accounts.push(account);
    }
    const [hot, ...payees] = accounts;
    // The hot account pays the payees, they pay it back and each other: every group of every API touches the
    // same four accounts, first met in a different order each time (each API's order is drawn on its own), so
    // only locking them in one global order (account id) keeps concurrent groups from deadlocking.
    const pairs: [AccountInfo, AccountInfo][] = [];
    for (const payee of payees) pairs.push([hot, payee], [payee, hot]);
    for (const a of payees) for (const b of payees) if (a !== b) pairs.push([a, b]);
    const rng = new Rng(SEED ^ 0x5eed4);
    const plans = origins().map(() => Array.from({ length: PER_API }, () => rng.pick(pairs)));
    // Deadlocks are retried inside the service (never a 5xx), so the server's own count is what shows one.
    const deadlocks = async () =>
      (
        await t.dataSource.query<{ n: string }[]>(
          `SELECT deadlocks::text AS n FROM pg_stat_database WHERE datname = current_database()`,
        )
      )[0].n;
    const deadlocksBefore = await deadlocks();
    const statuses: number[] = [];
    await Promise.all(
      origins().map(async (origin, api) => {
        let next = 0;
        const lane = async () => {
          while (next < PER_API) {
            const i = next++;
            const [from, to] = plans[api][i];
            const answer = await request(origin)
              .post('/v1/wallet/transactions')
              .set('Authorization', bearer(party.token))
              .set('Idempotency-Key', `scale-hot-${SEED}-${api}-${i}`)
              .send(transferBody(from.uuid, to.cvu, 1));
            statuses.push(answer.status);
          }
        };
        await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
      }),
    );
    expect(statuses.filter((status) => status !== 201)).toEqual([]);
    expect(statuses).toHaveLength(3 * PER_API);
    // A busy backend reports its counters at most once a second and an idle one up to 10 s later; one that
    // exits reports them at once: end the APIs' idle connections (their pools open others) before reading.
    await t.dataSource.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'wallet-api' AND state = 'idle'`,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await deadlocks()).toBe(deadlocksBefore);
    // Each balance is its funding less what it sent (amount, fee, tax) plus what it received; the four together
    // hold the funding less the fees and taxes charged: money conserved.
    const planned = plans.flat();
    let total = new Decimal(0);
    let charged = new Decimal(0);
    for (const account of accounts) {
      const [row] = await t.dataSource.query<
        { sent: string; received: string; charges: string; withdraws: number; deposits: number }[]
      >(
        `SELECT coalesce(sum(amount + fees + taxes) FILTER (WHERE movement_type = 'WITHDRAW'), 0)::text AS sent,
                coalesce(sum(amount - fees - taxes) FILTER (WHERE movement_type = 'DEPOSIT'), 0)::text AS received,
                coalesce(sum(fees + taxes), 0)::text AS charges,
                count(*) FILTER (WHERE movement_type = 'WITHDRAW')::int AS withdraws,
                count(*) FILTER (WHERE movement_type = 'DEPOSIT')::int AS deposits
           FROM transfers WHERE account_id = $1`,
        [account.uuid],
      );
      expect(row.withdraws).toBe(planned.filter(([from]) => from === account).length);
      expect(row.deposits).toBe(planned.filter(([, to]) => to === account).length);
      const read = await request(origins()[accounts.indexOf(account) % 3])
        .get(`/v1/wallet/accounts/${account.uuid}/balance`)
        .set('Authorization', bearer(party.token));
      const balance = new Decimal(String((read.body as { balance: number }).balance));
      expect(balance.toFixed(2)).toBe(new Decimal(FUNDING).minus(row.sent).plus(row.received).toFixed(2));
      total = total.plus(balance);
      charged = charged.plus(row.charges);
    }
    expect(total.plus(charged).toFixed(2)).toBe(new Decimal(FUNDING * accounts.length).toFixed(2));
  }, 60_000);

  it('5. webhook order per transfer kept with two workers: first acknowledgements in emission order', async () => {
    // Five updates for each of eight transfers, interleaved, each in its own transaction; the receiver refuses
    // the first attempt of every third event, so a later event of the same transfer has to wait for it.
    const transfers = await t.dataSource.query<{ id: string; app_id: string }[]>(
      `SELECT id, app_id FROM transfers WHERE app_id = $1 ORDER BY created_at DESC LIMIT 8`,
      [parties[0].client.appId],
    );
    expect(transfers).toHaveLength(8);
    let refused = 0;
    receiver.responder = (hook, self) => {
      if (self.attemptsOf(hook.id).length > 1 || hook.index % 3 !== 0) return { status: 200 };
      refused++;
      return { status: 503 };
    };
    const webhooks = t.app.get(WebhooksService);
    const emitted = new Map<string, string[]>();
    for (let round = 0; round < 5; round++)
      for (const transfer of transfers) {
        const id = await t.dataSource.transaction((manager) =>
          webhooks.emit(manager, {
            appId: transfer.app_id,
            event: WEBHOOK_EVENTS.test,
            subject: transfer.id,
            data: { message: `update ${round} of ${transfer.id}` },
          }),
        );
        emitted.set(transfer.id, [...(emitted.get(transfer.id) ?? []), id]);
      }
    const all = [...emitted.values()].flat();
    const delivered = await waitFor(
      () => all.every((id) => receiver.acknowledged(id).length > 0),
      40_000,
      100,
    );
    expect(delivered).toBe(true);
    const firstAck = (id: string) => receiver.acknowledged(id)[0].index;
    const outOfOrder = [...emitted].filter(([, ids]) =>
      ids.some((id, i) => i > 0 && firstAck(id) < firstAck(ids[i - 1])),
    );
    expect(outOfOrder).toEqual([]);
    expect(refused).toBeGreaterThan(0);
    receiver.responder = () => ({ status: 200 });
  }, 60_000);

  it('6. the token rate limit counts across the APIs; a revoked key is refused by every API within AUTH_CACHE_MS', async () => {
    // One client address (TRUST_PROXY=1: the right-most X-Forwarded-For entry) spreads 1.5 times the limit over three APIs.
    const party = parties[1];
    const statuses = await Promise.all(
      Array.from(
        { length: TOKEN_LIMIT * 1.5 },
        async (_, i) =>
          (
            await request(origins()[i % 3])
              .post('/v1/oauth/app/token')
              .set('X-Forwarded-For', `203.0.113.${(SEED % 200) + 1}`)
              .send({ appId: party.client.appId, token: 'not-an-assertion', grantType: 'client_credentials' })
          ).status,
      ),
    );
    expect(statuses.filter((status) => status === 429)).toHaveLength(TOKEN_LIMIT / 2);

    // A user token signed with an application key: every API verifies it (and caches the verification).
    const key = newKeyPair();
    const created = await t.app
      .get(AppsService)
      .create({ name: 'scale-revoked', publicKey: key.publicPem }, cliActor('test'));
    const client: TestClient = { appId: created.appId, keyId: created.keyId, key };
    const clientToken = await accessToken(origins()[2], client);
    const owner = await createOwner(t.http, clientToken, 'USER');
    const account = await openAccount(t.http, clientToken, client.appId, owner, 'USER');
    const userToken = await subjectToken(client, owner);
    const read = () =>
      Promise.all(
        origins().map(
          async (origin) =>
            (
              await request(origin)
                .get(`/v1/wallet/accounts/${account.uuid}/balance`)
                .set('Authorization', bearer(userToken))
            ).status,
        ),
      );
    expect(await read()).toEqual([200, 200, 200]); // every API now holds the verification in its cache
    const cli = await runCli(t, ['apps', 'revoke-key', '--app-id', client.appId, '--key-id', client.keyId]);
    expect(cli.code).toBe(0);
    const revokedAt = Date.now();
    // Refused at once for a new token on every API (the key is read from the database)…
    const tokenAnswers = await Promise.all(
      origins().map(
        async (origin) =>
          (
            await request(origin)
              .post('/v1/oauth/app/token')
              .send({
                appId: client.appId,
                token: await clientAssertion(client),
                grantType: 'client_credentials',
              })
          ).status,
      ),
    );
    expect(tokenAnswers).toEqual([401, 401, 401]);
    // … and the user token signed with it within AUTH_CACHE_MS (each API's cache of verified tokens).
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, revokedAt + AUTH_CACHE_MS + 50 - Date.now())),
    );
    expect(await read()).toEqual([401, 401, 401]);
  }, 30_000);
});
