import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import request from 'supertest';
import { LedgerService } from '../src/modules/wallet/ledger/ledger.service.js';
import { PinoLogger } from '../src/common/logging/pino-logger.js';
import { IdempotencyKeyPruner } from '../src/modules/transfers/idempotency-pruner.js';
import { TransferBatcher } from '../src/modules/transfers/transfer-batcher.js';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import { failDeletesWhenLeft, holdTransaction } from './support/database.js';
import { loggedDuring } from './support/logs.js';
import { proxyWithStatementLog, type PgStatementLog } from './support/pg-statements.js';
import type { TcpProxy } from './support/tcp-proxy.js';
import { bearer, expectValidation } from './support/identity.js';
import { waitFor } from './support/processes.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { balanceOf, postTransfer, transferBody, transferEvents } from './support/transfers.js';
import { createOwner, openAccount, setBalance, type AccountInfo } from './support/wallet.js';

/**
 * Idempotency-Key under races and cut connections (issue 9, suite 2). transfers-money covers one key sent
 * twice in a row, another body afterwards, and 20 identical requests racing on an external transfer. Here
 * the races are forced: a test connection holds the sender's ledger row, so every request is inside the
 * service (the first holding the key, the others waiting on it) before any of them may finish. And the
 * client cuts its connection after sending, before the answer; the retry gets the stored result.
 */
describe('idempotency keys: races and cut connections (real database)', () => {
  let t: TestApp;
  let client: TestClient;
  let token: string;
  let port: number;
  const lockers: pg.Client[] = [];

  beforeAll(async () => {
    // Enough connections for every racing request to be inside its transaction at once.
    t = await startTestApp({ env: { DATABASE_POOL_SIZE: '30' } });
    await t.app.listen(0, '127.0.0.1');
    port = (t.http.address() as AddressInfo).port;
    client = await registerClient(t.app, 'idempotency');
    token = await accessToken(t.http, client);
  });
  afterAll(async () => {
    await Promise.all(lockers.map((locker) => locker.end().catch(() => undefined)));
    await t.close();
  });

  const open = async (balance = 0): Promise<AccountInfo> => {
    const account = await openAccount(t.http, token, client.appId, await createOwner(t.http, token));
    if (balance > 0) await setBalance(t.http, token, account.uuid, balance);
    return account;
  };
  const send = (body: unknown, key: string) => postTransfer(t.http, token, body, key);

  /** Holds the account's ledger row (FOR UPDATE) from a connection of the test until `release`. */
  async function holdLedgerRow(accountId: string): Promise<{ release: () => Promise<void> }> {
    const locker = new pg.Client({ connectionString: t.databaseUrl });
    lockers.push(locker);
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT id FROM ledger_accounts WHERE id = $1 FOR UPDATE', [accountId]);
    return {
      release: async () => {
        await locker.query('COMMIT');
        await locker.end();
      },
    };
  }

  /** Backends of this database waiting on a lock (the row the test holds, or the key another request holds). */
  const waitingOnLocks = async (): Promise<number> =>
    (
      (await t.dataSource.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      )) as { n: number }[]
    )[0].n;

  /** `n` transfer requests inside the service: at the database or queued for a call. */
  const allInside = (n: number): boolean => {
    const load = t.app.get(TransferBatcher).load();
    return load.waiting + load.transfers >= n;
  };

  const transfersOf = async (accountId: string): Promise<{ id: string; amount: string }[]> =>
    (await t.dataSource.query(`SELECT id, amount::text FROM transfers WHERE account_id = $1`, [
      accountId,
    ])) as { id: string; amount: string }[];

  const keyRows = async (key: string): Promise<number> =>
    (
      (await t.dataSource.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1`, [key])) as {
        n: number;
      }[]
    )[0].n;

  it('20 requests with one key, all inside the service at once: one transfer, 20 identical answers', async () => {
    const sender = await open(1000);
    const receiver = await open();
    const body = transferBody(sender.uuid, receiver.cvu, 10);
    const key = `race-internal-${Date.now()}`;
    const held = await holdLedgerRow(sender.uuid);
    const pending = Array.from({ length: 20 }, () => send(body, key).then((response) => response));
    // The first call holds the key and waits for the row; the rest share its accounts, so they wait in the
    // group-commit queue for it, whatever TRANSFER_BATCH_CONCURRENCY (decisions/0015 and 0016).
    expect(await waitFor(async () => allInside(20) && (await waitingOnLocks()) >= 1, 20_000, 50)).toBe(true);
    await held.release();
    const responses = await Promise.all(pending);
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(201));
    for (const response of responses) {
      expect(response.body).toStrictEqual(responses[0].body);
      expect(response.headers['content-type']).toBe(responses[0].headers['content-type']);
    }
    expect(responses[0].body).toMatchObject({ status: 'ACREDITADO', amount: { value: 10 } });

    const withdrawals = await transfersOf(sender.uuid);
    expect(withdrawals.map((row) => row.id)).toEqual([responses[0].body.uuid]);
    const deposits = await transfersOf(receiver.uuid);
    expect(deposits).toHaveLength(1);
    expect(await transferEvents(t.dataSource, deposits[0].id)).toHaveLength(1);
    expect(await balanceOf(t.http, token, sender.uuid)).toBe(990);
    expect(await balanceOf(t.http, token, receiver.uuid)).toBe(10);
    expect(await keyRows(key)).toBe(1);
  }, 120_000);

  it('the same key with another body while the first is in flight: 400 at Idempotency-Key, one effect', async () => {
    const sender = await open(1000);
    const receiver = await open();
    const first = transferBody(sender.uuid, receiver.cvu, 25);
    const other = { ...first, amount: 26 };
    const key = `race-bodies-${Date.now()}`;
    const held = await holdLedgerRow(sender.uuid);
    const winner = send(first, key).then((response) => response);
    expect(await waitFor(async () => (await waitingOnLocks()) >= 1, 20_000, 50)).toBe(true);
    const same = Array.from({ length: 5 }, () => send(first, key).then((response) => response));
    const different = Array.from({ length: 5 }, () => send(other, key).then((response) => response));
    expect(await waitFor(async () => allInside(11) && (await waitingOnLocks()) >= 1, 20_000, 50)).toBe(true);
    await held.release();

    const answer = await winner;
    expect(answer.status).toBe(201);
    for (const response of await Promise.all(same)) {
      expect(response.status).toBe(201);
      expect(response.body).toStrictEqual(answer.body);
    }
    for (const response of await Promise.all(different))
      expect(expectValidation(response).map((item) => item.path)).toEqual(['Idempotency-Key']);
    expect((await transfersOf(sender.uuid)).map((row) => [row.id, Number(row.amount)])).toEqual([
      [answer.body.uuid, 25],
    ]);
    expect(await balanceOf(t.http, token, sender.uuid)).toBe(975);
    // Sequentially too, once the first has committed.
    expect(expectValidation(await send(other, key)).map((item) => item.path)).toEqual(['Idempotency-Key']);
  }, 120_000);

  it("a key's stored answer is the user's who made it: another user of the application sending it is refused, and shown nothing", async () => {
    const ownerA = await createOwner(t.http, token);
    const ownerB = await createOwner(t.http, token);
    const a = await openAccount(t.http, token, client.appId, ownerA);
    await setBalance(t.http, token, a.uuid, 100);
    const receiver = await open();
    const body = transferBody(a.uuid, receiver.cvu, 10);
    const key = `user-scoped-${Date.now()}`;
    const asA = await subjectToken(client, ownerA);
    const first = await postTransfer(t.http, asA, body, key);
    expect(first.status).toBe(201);
    expect((await postTransfer(t.http, asA, body, key)).body).toStrictEqual(first.body); // A's retry: replayed
    // B names A's account: without the key, 400 notfound; with A's key, the same refusal of the key's reuse,
    // never A's transfer (its names, tax ids and CVUs).
    const asB = await subjectToken(client, ownerB);
    const stranger = await postTransfer(t.http, asB, body, key);
    expect({ status: stranger.status, paths: expectValidation(stranger).map((item) => item.path) }).toEqual({
      status: 400,
      paths: ['Idempotency-Key'],
    });
    expect(JSON.stringify(stranger.body)).not.toContain(a.cvu);
    expect((await transfersOf(a.uuid)).length).toBe(1);
  });

  /** POSTs the transfer on a raw connection and destroys the socket at `cut`; resolves once it is closed. */
  function sendAndCut(
    body: unknown,
    key: string,
    cut: (request: http.ClientRequest) => Promise<void> | void,
  ): Promise<{ answered: boolean }> {
    return new Promise((resolve) => {
      let answered = false;
      const payload = JSON.stringify(body);
      const req = http.request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/wallet/transactions',
        headers: {
          Authorization: bearer(token),
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(payload),
          'Idempotency-Key': key,
        },
      });
      req.on('response', (response) => {
        answered = true;
        response.resume();
      });
      req.on('error', () => undefined); // the cut itself
      req.on('close', () => resolve({ answered }));
      req.end(payload, () => void Promise.resolve(cut(req)).then(() => req.destroy()));
    });
  }

  it('connection cut after the body, while the transfer is in the service: the retry gets the stored result', async () => {
    const sender = await open(1000);
    const receiver = await open();
    const body = transferBody(sender.uuid, receiver.cvu, 40);
    const key = `cut-${Date.now()}`;
    const held = await holdLedgerRow(sender.uuid);
    // Cut once the request holds the key and waits for the row: the service has it, the client has no answer.
    const cut = await sendAndCut(body, key, async () => {
      expect(await waitFor(async () => (await waitingOnLocks()) >= 1, 20_000, 50)).toBe(true);
    });
    expect(cut.answered).toBe(false);
    // A retry sent at once waits for the first (on the key, or for a free call), then replays what it stored.
    const retry = send(body, key).then((response) => response);
    expect(await waitFor(async () => allInside(2) && (await waitingOnLocks()) >= 1, 20_000, 50)).toBe(true);
    await held.release();
    const answer = await retry;
    expect(answer.status).toBe(201);
    const rows = await transfersOf(sender.uuid);
    expect(rows.map((row) => row.id)).toEqual([answer.body.uuid]); // the first request's transfer, once
    // A later retry (after the first committed) gets the same stored answer.
    const later = await send(body, key);
    expect(later.status).toBe(201);
    expect(later.body).toStrictEqual(answer.body);
    expect(await balanceOf(t.http, token, sender.uuid)).toBe(960);
    expect(await balanceOf(t.http, token, receiver.uuid)).toBe(40);
    expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
  }, 120_000);

  it('connection cut right after the body (no lock, 15 times): retried until an answer, exactly one effect each', async () => {
    const sender = await open(1000);
    const receiver = await open();
    for (let n = 0; n < 15; n++) {
      const body = transferBody(sender.uuid, receiver.cvu, 1 + n);
      const key = `cut-now-${Date.now()}-${n}`;
      const cut = await sendAndCut(body, key, () => undefined);
      expect(cut.answered).toBe(false);
      // The first request may still be running, have committed, or never have started: the key decides.
      let answer: request.Response | undefined;
      for (let attempt = 0; attempt < 20 && answer?.status !== 201; attempt++) answer = await send(body, key);
      expect(answer?.status).toBe(201);
      const rows = (await transfersOf(sender.uuid)).filter((row) => Number(row.amount) === 1 + n);
      expect(rows.map((row) => row.id)).toEqual([answer?.body.uuid]);
    }
    // 1 + 2 + … + 15 = 120 left the sender once each, whoever ran them.
    expect(await balanceOf(t.http, token, sender.uuid)).toBe(880);
    expect(await balanceOf(t.http, token, receiver.uuid)).toBe(120);
    const [{ n }] = (await t.dataSource.query(
      `SELECT count(*)::int AS n FROM idempotency_keys WHERE key LIKE 'cut-now-%'`,
    )) as { n: number }[];
    expect(n).toBe(15);
  }, 120_000);
});

/**
 * The hourly pruner deletes in batches, each its own statement (decision 0075): a backlog larger than what one
 * statement deletes within the statement timeout is still worked off, batch by batch.
 */
describe('IdempotencyKeyPruner: batches under the statement timeout (real database)', () => {
  let t: TestApp;
  let proxy: TcpProxy;
  let statements: PgStatementLog;
  let pruner: IdempotencyKeyPruner;
  let prunerData: DataSource;

  beforeAll(async () => {
    t = await startTestApp();
    const proxied = await proxyWithStatementLog(t.databaseUrl);
    proxy = proxied.proxy;
    statements = proxied.log;
    // The pruner's own connections, through the proxy that records its statements, with a tiny statement timeout.
    prunerData = new DataSource({
      type: 'postgres',
      url: proxied.url,
      extra: { options: '-c statement_timeout=300' },
    });
    await prunerData.initialize();
    pruner = new IdempotencyKeyPruner(prunerData, await t.app.resolve(PinoLogger));
  }, 120_000);
  afterAll(async () => {
    await prunerData?.destroy();
    await proxy?.close();
    await t?.close();
  });

  /** `count` keys of a new application, made `hoursAgo` hours ago; the application's id. */
  const seed = async (count: number, hoursAgo: number): Promise<string> => {
    const appId = randomUUID();
    await t.dataSource.query(
      `INSERT INTO idempotency_keys (app_id, key, request_hash, created_at)
       SELECT $1, 'k' || i, 'h', now() - ($3::int * interval '1 hour') FROM generate_series(1, $2) i`,
      [appId, count, hoursAgo],
    );
    return appId;
  };
  const keysOf = async (appId: string): Promise<number> => {
    const [{ n }] = (await t.dataSource.query(
      `SELECT count(*)::int AS n FROM idempotency_keys WHERE app_id = $1`,
      [appId],
    )) as { n: number }[];
    return n;
  };

  it('removes more expired keys than one batch holds in several statements, and keeps the recent ones', async () => {
    const expired = await seed(10, 49);
    const recent = await seed(3, 1);
    const before = statements.count('DELETE FROM idempotency_keys');

    const deleted = await pruner.prune({ batch: 3 });

    expect(deleted).toBe(10);
    // 3 + 3 + 3 + 1: the fourth statement deletes fewer than a batch and ends the run.
    expect(statements.count('DELETE FROM idempotency_keys') - before).toBe(4);
    expect(await keysOf(expired)).toBe(0);
    expect(await keysOf(recent)).toBe(3);
  });

  it('stops at the run budget and goes on at the next run', async () => {
    const expired = await seed(10, 49);
    expect(await pruner.prune({ batch: 3, maxBatches: 2 })).toBe(6);
    expect(await keysOf(expired)).toBe(4);
    expect(await pruner.prune({ batch: 3, maxBatches: 2 })).toBe(4);
    expect(await keysOf(expired)).toBe(0);
  });

  it('makes progress when one statement over the whole backlog could not finish within the statement timeout', async () => {
    const expired = await seed(10, 49);
    // A transaction holds one expired key: one DELETE of every expired key waits for it until the 300 ms
    // statement timeout cancels it, and deletes nothing. The batches skip the held key and take the others.
    const held = await holdTransaction(t.dataSource, [
      [`SELECT 1 FROM idempotency_keys WHERE app_id = $1 AND key = 'k1' FOR UPDATE`, [expired]],
    ]);
    try {
      expect(await pruner.prune()).toBe(9);
      expect(await keysOf(expired)).toBe(1);
    } finally {
      await held.release();
    }
    // Once the transaction ends, the next run takes the key it held.
    expect(await pruner.prune()).toBe(1);
    expect(await keysOf(expired)).toBe(0);
  });

  it('a run that fails part way answers and logs the keys it deleted before the failure (decision 0078)', async () => {
    const expired = await seed(10, 49);
    // The third statement fails (4 of the keys left): the first two deleted 6, committed each on its own.
    const removeFault = await failDeletesWhenLeft(
      t.dataSource,
      'idempotency_keys',
      `app_id = '${expired}'`,
      4,
    );
    const logged = await loggedDuring('warn', () => pruner.prune({ batch: 3 })).finally(removeFault);
    expect(logged.result).toBe(6);
    expect(await keysOf(expired)).toBe(4);
    expect(logged.lines).toEqual([
      [
        {
          deleted: 6,
          err: expect.objectContaining({
            message:
              'deleting from idempotency_keys failed after 6 rows in 2 statements: a delete the test refuses',
          }),
        },
        'pruning idempotency keys failed; will try again',
      ],
    ]);
    // The next run deletes the rest.
    expect(await pruner.prune({ batch: 3 })).toBe(4);
    expect(await keysOf(expired)).toBe(0);
  });
});
