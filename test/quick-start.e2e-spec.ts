import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { accessToken, newKeyPair, type TestClient } from './support/auth.js';
import { bearer, userBody } from './support/identity.js';
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
import { TEST_BASE_URL } from './support/test-app.js';
import { DIRECTORY, counterParty } from './support/transfers.js';
import { accountBody } from './support/wallet.js';
import { pollUntil, WebhookReceiver } from './support/webhook-receiver.js';

const GUARD = path.join(ROOT, 'test/support/pg-busy-client-guard.mjs');
const PG_DEPRECATION = 'Calling client.query() when the client is already executing a query';
const BUSY_CLIENT = 'WALLET_PG_BUSY_CLIENT';

interface AccessLine {
  level: number;
  msg: string;
  req: { id: string; method: string; path: string };
  res: { statusCode: number | null };
  responseTime: number;
}

/**
 * The quick start as a new user meets it: `node dist/src/main.js` with no DATABASE_URL (embedded PostgreSQL,
 * API and worker in one process, the queue on BullMQ's PostgreSQL backend), driven over HTTP and the CLI.
 * It runs under `--trace-deprecation` with a guard that reports any query sent to a busy pg client, and at
 * LOG_LEVEL=debug so that every access line is written; the suite reads its real stdout and stderr.
 */
describe('quick start process: access lines and pg client discipline', () => {
  let dataDir: string;
  let child: ChildProcess;
  let stdout = '';
  let stderr = '';
  let origin: string;
  let receiver: WebhookReceiver;
  let client: TestClient;
  let token: string;

  const env = () =>
    childEnv({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'debug',
      PUBLIC_BASE_URL: TEST_BASE_URL,
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      CLEARING_SIM_DELAY_MS: '100',
    });

  const cli = async (args: string[]) => {
    const result = await runNode(CLI_JS, args, env());
    if (result.code !== 0) throw new Error(`cli ${args.join(' ')} failed:\n${result.stderr}`);
    return JSON.parse(result.stdout) as Record<string, string>;
  };

  const accessLines = (): AccessLine[] =>
    stdout
      .split('\n')
      .filter((line) => line.includes('"msg":"request completed"'))
      .map((line) => JSON.parse(line) as AccessLine);

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-quick-start-'));
    chmodSync(dataDir, 0o755); // the server runs as the postgres user when we are root
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, ['--trace-deprecation', '--import', GUARD, MAIN_JS], {
      cwd: ROOT,
      env: { ...env(), PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const ready = await waitFor(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) return true;
        try {
          return (await fetch(`${origin}/v1/health/ready`)).status === 200;
        } catch {
          return false; // not listening yet
        }
      },
      40_000,
      200,
    );
    if (!ready || child.exitCode !== null) {
      throw new Error(`the API did not become ready (exit ${child.exitCode}):\n${stderr.slice(-3000)}`);
    }

    receiver = await WebhookReceiver.start();
    const key = newKeyPair();
    const keyFile = path.join(dataDir, 'client.pub.pem');
    writeFileSync(keyFile, key.publicPem);
    const created = await cli([
      'apps',
      'create',
      '--name',
      'quick start',
      '--public-key',
      keyFile,
      '--webhook-url',
      receiver.url(),
    ]);
    client = { appId: created.appId, keyId: created.keyId, key };
    token = await accessToken(origin, client);
  }, 55_000);

  afterAll(async () => {
    await receiver?.close();
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    const cluster = path.join(dataDir, 'postgres');
    // A killed API leaves its server behind: stop it (SIGQUIT, immediate shutdown) before removing its data.
    for (const pid of postmastersOf(cluster)) process.kill(pid, 'SIGQUIT');
    await waitFor(() => postmastersOf(cluster).length === 0, 5_000);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('logs each access line with its real status: 201 at debug, 400 and 404 at info, no body or credential', async () => {
    const marker = `body-marker-${randomUUID()}`;
    const user = userBody();
    const created = await request(origin)
      .post('/v1/users')
      .set('Authorization', bearer(token))
      .set('X-Request-Id', 'quick-start-201')
      .send(user);
    expect(created.status).toBe(201);
    const refused = await request(origin)
      .post('/v1/users')
      .set('Authorization', bearer(token))
      .set('X-Request-Id', 'quick-start-400')
      .send({ ...userBody(), unexpected: marker });
    expect(refused.status).toBe(400);
    const unknownUser = randomUUID();
    const missing = await request(origin)
      .get(`/v1/users/${unknownUser}`)
      .set('Authorization', bearer(token))
      .set('X-Request-Id', 'quick-start-404');
    expect(missing.status).toBe(404);

    const lineOf = (id: string) => accessLines().find((line) => line.req.id === id);
    await pollUntil('the three access lines', () =>
      ['quick-start-201', 'quick-start-400', 'quick-start-404'].every((id) => lineOf(id)),
    );
    const expected = (id: string, level: number, method: string, pathName: string, statusCode: number) => ({
      level,
      msg: 'request completed',
      req: { id, method, path: pathName },
      res: { statusCode },
      responseTime: expect.any(Number),
    });
    expect(lineOf('quick-start-201')).toMatchObject(
      expected('quick-start-201', 20, 'POST', '/v1/users', 201),
    );
    expect(lineOf('quick-start-400')).toMatchObject(
      expected('quick-start-400', 30, 'POST', '/v1/users', 400),
    );
    expect(lineOf('quick-start-404')).toMatchObject(
      expected('quick-start-404', 30, 'GET', `/v1/users/${unknownUser}`, 404),
    );

    // Every access line so far (the token request, health probes excepted) carries a status.
    expect(accessLines().length).toBeGreaterThanOrEqual(4);
    for (const line of accessLines()) expect(line.res.statusCode).toEqual(expect.any(Number));

    const lines = JSON.stringify(accessLines());
    for (const secret of [token, marker, user.legalInformation.taxId, user.lastName, 'Bearer'])
      expect(lines).not.toContain(secret);
    expect(lines.toLowerCase()).not.toContain('authorization');
  }, 30_000);

  it('moves money and sends webhooks without a pg deprecation or a query on a busy pg client', async () => {
    const api = () => request(origin);
    const openAccount = async () => {
      const user = await api().post('/v1/users').set('Authorization', bearer(token)).send(userBody());
      expect(user.status).toBe(201);
      const account = await api()
        .post('/v1/wallet/accounts')
        .set('Authorization', bearer(token))
        .send(accountBody(client.appId, user.body.uuid as string));
      expect(account.status).toBe(201);
      const uuid = account.body.uuid as string;
      const funded = await api()
        .post(`/v1/wallet/accounts/${uuid}/balance`)
        .set('Authorization', bearer(token))
        .send({ balance: 500 });
      expect(funded.status).toBe(200);
      return { uuid, cvu: account.body.cvu as string };
    };
    const [payer, payee] = [await openAccount(), await openAccount()];
    const transfer = (identifier: string, amount: number) =>
      api()
        .post('/v1/wallet/transactions')
        .set('Authorization', bearer(token))
        .send({
          accountUUID: payer.uuid,
          movementType: 'WITHDRAW',
          counterParty: counterParty(identifier),
          amount,
          concept: 'VAR',
        });
    const balance = (uuid: string) =>
      api().get(`/v1/wallet/accounts/${uuid}/balance`).set('Authorization', bearer(token));
    // Transfers and balance reads at once: the group commit and the batched balance reads.
    const answers = await Promise.all([
      transfer(payee.cvu, 3),
      transfer(payee.cvu, 4),
      transfer(DIRECTORY.nacion.number, 5),
      balance(payer.uuid),
      balance(payee.uuid),
      balance(payer.uuid),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 200, 200, 200]);
    const external = answers[2].body.uuid as string;

    const { eventId } = await cli(['webhooks', 'send-test', '--app-id', client.appId]);
    // The clearing simulator settles the external transfer in this process's worker, and the webhook
    // worker delivers the test event and the transfer's update.
    await pollUntil(
      'the external transfer settled',
      async () => {
        const answer = await api()
          .get(`/v1/wallet/transactions/${external}`)
          .set('Authorization', bearer(token));
        return answer.body.status === 'ACREDITADO';
      },
      20_000,
      100,
    );
    await pollUntil(
      'the test event and the transfer update acknowledged',
      () =>
        receiver.acknowledged(eventId).length === 1 &&
        receiver.acknowledged().some((hook) => hook.id !== eventId),
      20_000,
    );
    expect((await balance(payee.uuid)).body).toMatchObject({ balance: 507 });

    child.kill('SIGTERM');
    const exited = await waitFor(() => child.exitCode !== null || child.signalCode !== null, 20_000, 50);
    expect(exited).toBe(true);
    expect(child.exitCode).toBe(0);
    expect(isProcessRunning(child.pid ?? 0)).toBe(false);
    // The API stopped the database server it started: none is left on the quick start's cluster.
    expect(await waitFor(() => postmastersOf(path.join(dataDir, 'postgres')).length === 0, 5_000)).toBe(true);
    expect(stderr).not.toContain(PG_DEPRECATION);
    expect(stderr).not.toContain(BUSY_CLIENT);
  }, 50_000);
});
