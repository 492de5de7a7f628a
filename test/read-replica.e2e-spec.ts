import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import {
  ensureEmbeddedPostgres,
  type EmbeddedPostgresHandle,
} from '../src/common/database/embedded-postgres.js';
import { dataSourceOptions } from '../src/data-source.js';
import { accessToken, newKeyPair, type TestClient } from './support/auth.js';
import { bearer, userBody } from './support/identity.js';
import {
  childEnv,
  CLI_JS,
  freePort,
  isProcessRunning,
  MAIN_JS,
  ROOT,
  runNode,
  waitFor,
} from './support/processes.js';
import { TEST_BASE_URL } from './support/test-app.js';
import { transferBody } from './support/transfers.js';
import { accountBody } from './support/wallet.js';

/**
 * DATABASE_READ_URL on a real streaming replica (decision 0033). The suite makes its own primary (the
 * embedded binaries), migrates it, takes a base backup with the low-level API (pg_backup_start, a copy of the
 * data directory, pg_backup_stop's backup_label; a physical slot keeps the WAL), starts the copy as a hot
 * standby streaming from the primary, and runs the API as a real process with DATABASE_URL and
 * DATABASE_READ_URL. With replay paused on the replica, a write through the API shows at once on the routes
 * that must read the primary (balance, one event or transfer by id) and not on the replica-tolerant ones (events
 * list, transfer lists of the application and of an account, statement, balance at an instant); once replay
 * resumes they catch up, answering the lists byte for byte as the primary's single read does.
 */
/** An API process, where it listens, and what it wrote to stderr. */
interface Api {
  origin: string;
  process: ChildProcess;
  stderr: string;
}

describe('DATABASE_READ_URL: replica-tolerant reads on a real streaming replica', () => {
  let dir: string;
  let primary: EmbeddedPostgresHandle;
  let replica: ChildProcess | undefined;
  let replicaUrl: string;
  let replicaClient: pg.Client;
  let primaryClient: pg.Client;
  /** The API on DATABASE_URL and DATABASE_READ_URL, and one on DATABASE_URL only. */
  let api: Api | undefined;
  let primaryApi: Api | undefined;
  let origin: string;
  let token: string;
  let client: TestClient;

  const dbUrl = (base: string, port?: number) => {
    const url = new URL(base);
    url.pathname = '/wallet';
    if (port !== undefined) url.port = String(port);
    return url.toString();
  };

  /** Hot standby of `primary` from a low-level base backup, on `port`. */
  const startReplica = async (port: number): Promise<void> => {
    const owner = statSync(primary.clusterDir);
    const replicaDir = `${primary.clusterDir}-replica`;
    const admin = new pg.Client({ connectionString: primary.url });
    await admin.connect();
    try {
      await admin.query(`SELECT pg_create_physical_replication_slot('replica', true)`);
      await admin.query(`SELECT pg_backup_start('wallet-replica', true)`);
      // A copy of the running cluster, owners kept; the standby gets its WAL from the primary (the slot).
      const copy = spawnSync('cp', ['-a', primary.clusterDir, replicaDir]);
      if (copy.status !== 0) throw new Error(`cp failed: ${copy.stderr.toString()}`);
      const { rows } = await admin.query<{ labelfile: string; spcmapfile: string }>(
        `SELECT labelfile, spcmapfile FROM pg_backup_stop(true)`,
      );
      for (const leftover of ['postmaster.pid', 'postmaster.opts'])
        rmSync(path.join(replicaDir, leftover), { force: true });
      spawnSync('sh', ['-c', `rm -rf '${replicaDir}/pg_wal/'* '${replicaDir}/pg_replslot/'*`]);
      const write = (name: string, text: string, flag = 'w') => {
        writeFileSync(path.join(replicaDir, name), text, { mode: 0o600, flag });
        chownSync(path.join(replicaDir, name), owner.uid, owner.gid);
      };
      write('backup_label', rows[0].labelfile);
      if (rows[0].spcmapfile) write('tablespace_map', rows[0].spcmapfile);
      write('standby.signal', '');
      const source = new URL(primary.url);
      const conninfo = `host=127.0.0.1 port=${primary.port} user=${decodeURIComponent(source.username)} password=${decodeURIComponent(source.password)} application_name=wallet-replica`;
      write(
        'postgresql.auto.conf',
        `\nprimary_conninfo = '${conninfo}'\nprimary_slot_name = 'replica'\nhot_standby = on\n`,
        'a',
      );
    } finally {
      await admin.end();
    }
    // The same binary and flags as the primary (its own command line), on the copy and another port.
    const argv = readFileSync(`/proc/${primary.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const args = argv.slice(1);
    args[args.indexOf('-D') + 1] = replicaDir;
    args[args.indexOf('-p') + 1] = String(port);
    replica = spawn(argv[0], args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      ...(process.getuid?.() === 0 ? { uid: owner.uid, gid: owner.gid } : {}),
    });
    let log = '';
    replica.stderr?.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    const streaming = await waitFor(
      async () => {
        const { rows } = await primaryClient.query<{ state: string }>(
          `SELECT state FROM pg_stat_replication WHERE application_name = 'wallet-replica'`,
        );
        return rows[0]?.state === 'streaming';
      },
      20_000,
      100,
    );
    if (!streaming) throw new Error(`the replica did not stream:\n${log.slice(-3000)}`);
  };

  /** Waits until the replica replayed everything the primary wrote so far. */
  const caughtUp = async () => {
    const { rows } = await primaryClient.query<{ lsn: string }>(`SELECT pg_current_wal_lsn()::text AS lsn`);
    return waitFor(
      async () => {
        const replayed = await replicaClient.query<{ done: boolean }>(
          `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done`,
          [rows[0].lsn],
        );
        return replayed.rows[0].done;
      },
      10_000,
      50,
    );
  };

  const get = (url: string) => request(origin).get(url).set('Authorization', bearer(token));

  /** The API as a real process with `env`, once it is ready. */
  const startApi = async (env: NodeJS.ProcessEnv): Promise<Api> => {
    const port = await freePort();
    const started: Api = {
      origin: `http://127.0.0.1:${port}`,
      process: spawn(process.execPath, [MAIN_JS], { cwd: ROOT, env: { ...env, PORT: String(port) } }),
      stderr: '',
    };
    started.process.stderr?.setEncoding('utf8').on('data', (chunk: string) => (started.stderr += chunk));
    const ready = await waitFor(async () => {
      try {
        return (await fetch(`${started.origin}/v1/health/ready`)).status === 200;
      } catch {
        return started.process.exitCode !== null;
      }
    }, 40_000);
    if (!ready || started.process.exitCode !== null) {
      throw new Error(`the API did not start:\n${started.stderr.slice(-3000)}`);
    }
    return started;
  };

  /** A new wallet account (written on the primary). */
  const open = async () => {
    const owner = await request(origin)
      .post('/v1/users')
      .set('Authorization', bearer(token))
      .send(userBody());
    expect(owner.status).toBe(201);
    const account = await request(origin)
      .post('/v1/wallet/accounts')
      .set('Authorization', bearer(token))
      .send(accountBody(client.appId, owner.body.uuid as string));
    expect(account.status).toBe(201);
    return { uuid: account.body.uuid as string, cvu: account.body.cvu as string };
  };

  /** Pauses the replica's replay: it stays where it is while the primary moves on. */
  const pauseReplay = async () => {
    await replicaClient.query('SELECT pg_wal_replay_pause()');
    expect(
      await waitFor(async () => {
        const { rows } = await replicaClient.query<{ state: string }>(
          `SELECT pg_get_wal_replay_pause_state() AS state`,
        );
        return rows[0].state === 'paused';
      }, 5_000),
    ).toBe(true);
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'wallet-replica-'));
    chmodSync(dir, 0o755); // the servers run as the postgres user when we are root
    primary = await ensureEmbeddedPostgres({
      dataDir: dir,
      databaseName: 'wallet',
      ownProcessGroup: false,
    });
    const migrate = new DataSource(dataSourceOptions(dbUrl(primary.url), 2, 'wallet-test-migrate'));
    await migrate.initialize();
    await migrate.runMigrations({ transaction: 'each' });
    await migrate.destroy();
    primaryClient = new pg.Client({ connectionString: dbUrl(primary.url) });
    await primaryClient.connect();

    const replicaPort = await freePort();
    await startReplica(replicaPort);
    replicaUrl = dbUrl(primary.url, replicaPort);
    // Streaming starts before the standby accepts connections ("the database system is starting up").
    const accepting = await waitFor(async () => {
      const candidate = new pg.Client({ connectionString: replicaUrl });
      try {
        await candidate.connect();
        replicaClient = candidate;
        return true;
      } catch {
        await candidate.end().catch(() => undefined);
        return false;
      }
    }, 20_000);
    if (!accepting) throw new Error('the replica did not accept connections within 20 s');

    const env = childEnv({
      DATABASE_URL: dbUrl(primary.url),
      DATABASE_READ_URL: replicaUrl,
      DATA_DIR: dir,
      PUBLIC_BASE_URL: TEST_BASE_URL,
      LOG_LEVEL: 'warn',
    });
    const key = newKeyPair();
    const keyFile = path.join(dir, 'client.pub.pem');
    writeFileSync(keyFile, key.publicPem);
    const created = await runNode(
      CLI_JS,
      ['apps', 'create', '--name', 'replica', '--public-key', keyFile],
      env,
    );
    if (created.code !== 0) throw new Error(`apps create failed: ${created.stderr}`);
    const app = JSON.parse(created.stdout) as { appId: string; keyId: string };
    client = { appId: app.appId, keyId: app.keyId, key };

    api = await startApi(env);
    // The same key file (DATA_DIR) and no DATABASE_READ_URL: this one reads the primary.
    const { DATABASE_READ_URL: _replica, ...primaryOnly } = env;
    primaryApi = await startApi(primaryOnly);
    origin = api.origin;
    token = await accessToken(origin, client);
  }, 90_000);

  afterAll(async () => {
    for (const started of [api, primaryApi]) {
      const child = started?.process;
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await waitFor(() => child.exitCode !== null || child.signalCode !== null, 10_000);
      }
    }
    await replicaClient?.end().catch(() => undefined);
    await primaryClient?.end().catch(() => undefined);
    if (replica?.pid !== undefined && isProcessRunning(replica.pid)) {
      replica.kill('SIGINT');
      await waitFor(() => !isProcessRunning(replica?.pid ?? 0), 10_000);
    }
    await primary?.stop();
    if (primary) rmSync(`${primary.clusterDir}-replica`, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('serves the events and transfer lists, statements and balances at an instant from the replica, the rest from the primary', async () => {
    const payer = await open();
    const payee = await open();
    const funded = await request(origin)
      .post(`/v1/wallet/accounts/${payer.uuid}/balance`)
      .set('Authorization', bearer(token))
      .send({ balance: 100 });
    expect(funded.status).toBe(200);
    expect(await caughtUp()).toBe(true);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await get(`/v1/wallet/accounts/${payer.uuid}/balance?at=${future}`)).body.balance).toBe(100);
    const before = await get('/v1/events?limit=100');
    expect(before.status).toBe(200);
    const eventsBefore = before.body as { id: string }[];
    const transfersBefore = (await get('/v1/wallet/transactions/all?limit=100')).body as { uuid: string }[];
    expect((await get(`/v1/wallet/accounts/${payer.uuid}/transactions`)).body).toEqual([]);

    await pauseReplay();
    const transfer = await request(origin)
      .post('/v1/wallet/transactions')
      .set('Authorization', bearer(token))
      .send(transferBody(payer.uuid, payee.cvu, 30));
    expect(transfer.status).toBe(201);
    const { rows: written } = await primaryClient.query<{ id: string }>(
      `SELECT id FROM webhook_events WHERE app_id = $1 ORDER BY seq`,
      [client.appId],
    );
    const newEvents = written.map((row) => row.id).filter((id) => !eventsBefore.some((e) => e.id === id));
    expect(newEvents.length).toBeGreaterThan(0);

    // The primary's routes see the write; the replica's do not yet.
    expect((await get(`/v1/wallet/accounts/${payer.uuid}/balance`)).body.balance).toBe(70);
    expect((await get(`/v1/events/${newEvents[0]}`)).status).toBe(200);
    expect((await get(`/v1/wallet/accounts/${payer.uuid}/balance?at=${future}`)).body.balance).toBe(100);
    const stale = await get(`/v1/wallet/accounts/${payer.uuid}/statement`);
    expect(stale.status).toBe(200);
    expect(stale.body.closingBalance).toBe(100);
    const listed = (await get('/v1/events?limit=100')).body as { id: string }[];
    expect(listed.map((e) => e.id)).toEqual(eventsBefore.map((e) => e.id));
    const transferId = transfer.body.uuid as string;
    const one = await get(`/v1/wallet/transactions/${transferId}`);
    expect(one.status).toBe(200);
    const all = (await get('/v1/wallet/transactions/all?limit=100')).body as { uuid: string }[];
    expect(all.map((item) => item.uuid)).toEqual(transfersBefore.map((item) => item.uuid));
    expect((await get(`/v1/wallet/accounts/${payer.uuid}/transactions`)).body).toEqual([]);

    // Replay resumed: the replica catches up and so do its routes.
    await replicaClient.query('SELECT pg_wal_replay_resume()');
    expect(await caughtUp()).toBe(true);
    expect((await get(`/v1/wallet/accounts/${payer.uuid}/balance?at=${future}`)).body.balance).toBe(70);
    const fresh = (await get('/v1/events?limit=100')).body as { id: string }[];
    expect(fresh.map((e) => e.id)).toEqual(written.map((row) => row.id));
    // The lists read from the replica answer exactly what the primary's single read answers.
    const allFresh = await get('/v1/wallet/transactions/all?limit=100');
    expect(allFresh.text).toContain(JSON.stringify(one.body));
    const ofPayer = await get(`/v1/wallet/accounts/${payer.uuid}/transactions`);
    expect(ofPayer.text).toBe(`[${JSON.stringify(one.body)}]`);
    expect(api?.stderr).toBe('');
  }, 40_000);

  it('a later page of a statement read on a replica behind page 1’s read takes its rows from the primary: the same bytes as one page of the period', async () => {
    const payer = await open();
    const payee = await open();
    const pay = async (amount: number) => {
      const response = await request(origin)
        .post('/v1/wallet/transactions')
        .set('Authorization', bearer(token))
        .send(transferBody(payer.uuid, payee.cvu, amount));
      expect(response.status).toBe(201);
    };
    const funded = await request(origin)
      .post(`/v1/wallet/accounts/${payer.uuid}/balance`)
      .set('Authorization', bearer(token))
      .send({ balance: 100 });
    expect(funded.status).toBe(200);
    await pay(1);
    await pay(2);
    expect(await caughtUp()).toBe(true);
    await pauseReplay();
    try {
      await pay(3); // on the primary only
      const period = { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' };
      const statement = (on: Api, query: Record<string, string | number>) =>
        request(on.origin)
          .get(`/v1/wallet/accounts/${payer.uuid}/statement`)
          .query({ ...period, ...query })
          .set('Authorization', bearer(token));
      const whole = await statement(primaryApi as Api, { limit: 500 });
      const body = whole.body as { movements: { balance: number }[] };
      expect(body.movements.map((m) => m.balance)).toStrictEqual([100, 99, 97, 94]);
      // The replica lacks the last posting: its own page 1 ends before it.
      const behind = await statement(api as Api, { limit: 500 });
      expect((behind.body as { movements: unknown[] }).movements).toHaveLength(3);

      // Page 1 on the primary; the next page through the API on the replica.
      const page1 = await statement(primaryApi as Api, { limit: 2 });
      const cursor = page1.headers['x-next-cursor'] as string;
      expect(cursor).toEqual(expect.any(String));
      const page2 = await statement(api as Api, { limit: 2, cursor });
      expect(page2.status).toBe(200);
      expect(page2.text).toBe(JSON.stringify({ ...whole.body, movements: body.movements.slice(2) }));
      expect(page2.headers['x-next-cursor']).toBeUndefined();
    } finally {
      await replicaClient.query('SELECT pg_wal_replay_resume()');
    }
    expect(await caughtUp()).toBe(true);
    expect([api?.stderr, primaryApi?.stderr]).toStrictEqual(['', '']);
  }, 40_000);
});
