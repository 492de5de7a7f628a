import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { MIGRATIONS } from '../migrations/index.js';
import { ensureEmbeddedPostgres } from '../src/common/database/embedded-postgres.js';
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
  WORKER_JS,
  type ProcessResult,
} from './support/processes.js';
import { freshKeyPair } from './support/keys.js';

/**
 * `npm start` with no DATABASE_URL: the API runs the embedded PostgreSQL under
 * DATA_DIR. Real processes throughout: start, graceful stop, restart on the
 * same data, and recovery after the API was killed (-9) and left its server
 * running as an orphan.
 */
describe('embedded PostgreSQL mode (node dist/src/main.js without DATABASE_URL)', () => {
  let dataDir: string;
  let clusterDir: string;
  let keyFile: string;
  let api: RunningApi | undefined;
  /** Every API process this file started, to make sure none outlives it. */
  const started: ChildProcess[] = [];

  interface RunningApi {
    child: ChildProcess;
    port: number;
    output: () => string;
    exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  }

  beforeAll(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-embedded-'));
    chmodSync(dataDir, 0o755); // the server runs as the postgres user when we are root
    clusterDir = path.join(dataDir, 'postgres');
    keyFile = path.join(dataDir, 'client-key.pem');
    writeFileSync(keyFile, freshKeyPair().publicPem);
  });

  afterAll(async () => {
    for (const child of started) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    for (const pid of postmasters()) {
      try {
        process.kill(pid, 'SIGQUIT'); // immediate shutdown
      } catch {
        /* gone meanwhile */
      }
    }
    const allGone = await waitFor(() => postmasters().length === 0, 5_000);
    for (const pid of postmasters()) process.kill(pid, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
    expect(allGone).toBe(true);
  });

  const env = (port?: number) =>
    childEnv({ DATA_DIR: dataDir, LOG_LEVEL: 'info', ...(port ? { PORT: String(port) } : {}) });

  const cli = (args: string[]): Promise<ProcessResult> => runNode(CLI_JS, args, env());

  /** postmaster.pid: line 1 the server's PID, line 4 its port. */
  const postmasterPid = (): { pid: number; port: number } => {
    const lines = readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]) };
  };

  /** Until postmaster.pid says the server is stopping (a smart shutdown under way), at most 5 s. */
  const untilStopping = () =>
    waitFor(() => readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').includes('stopping'), 5_000);

  /** PIDs of live postmasters on this data directory. */
  const postmasters = (): number[] => (clusterDir ? postmastersOf(clusterDir) : []);

  const withWalletDb = async <T>(use: (client: pg.Client) => Promise<T>): Promise<T> => {
    const password = readFileSync(path.join(dataDir, 'postgres.credentials'), 'utf8').trim();
    const { port } = postmasterPid();
    const client = new pg.Client({
      connectionString: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/wallet`,
    });
    await client.connect();
    try {
      return await use(client);
    } finally {
      await client.end();
    }
  };

  const get = (port: number, route: string) => fetch(`http://127.0.0.1:${port}/v1/${route}`);

  /** Starts the API and waits (bounded) until GET /v1/health/ready answers 200. */
  const startApi = async (): Promise<RunningApi> => {
    const port = await freePort();
    return startProcess(MAIN_JS, port, async () => (await get(port, 'health/ready')).status === 200);
  };

  /** Starts the worker and waits (bounded) until it logs that it runs. */
  const startWorker = (): Promise<RunningApi> =>
    startProcess(WORKER_JS, 0, (output) => Promise.resolve(output.includes('"msg":"worker running"')));

  const startProcess = async (
    script: string,
    port: number,
    isReady: (output: string) => Promise<boolean>,
  ): Promise<RunningApi> => {
    const child = spawn(process.execPath, [script], {
      cwd: ROOT,
      env: env(port || undefined),
      stdio: 'pipe',
    });
    started.push(child);
    let output = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    const ready = await waitFor(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) return true;
        try {
          return await isReady(output);
        } catch {
          return false; // not listening yet
        }
      },
      45_000,
      200,
    );
    if (!ready || child.exitCode !== null || child.signalCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`${script} did not become ready (exit ${child.exitCode}):\n${output.slice(-3000)}`);
    }
    return { child, port, output: () => output, exited };
  };

  /** Sends `signal` and waits (bounded) for the exit. */
  const stopApi = async (running: RunningApi, signal: NodeJS.Signals, timeoutMs = 20_000) => {
    running.child.kill(signal);
    const outcome = await Promise.race([
      running.exited,
      new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref()),
    ]);
    if (outcome === 'timeout') throw new Error(`the API did not exit within ${timeoutMs} ms of ${signal}`);
    return outcome;
  };

  const jwksKids = async (port: number): Promise<string[]> => {
    const response = await get(port, '.well-known/jwks.json');
    expect(response.status).toBe(200);
    const body = (await response.json()) as { keys: { kid: string; kty: string; alg: string }[] };
    for (const key of body.keys) expect(key).toMatchObject({ kty: 'EC', alg: 'ES256' });
    return body.keys.map((key) => key.kid);
  };

  let kid: string;
  let appId: string;
  let firstServerPid: number;
  let firstPort: number;

  it('starts the embedded server, applies the migrations and serves requests', async () => {
    api = await startApi();
    expect(existsSync(path.join(clusterDir, 'postmaster.pid'))).toBe(true);
    firstServerPid = postmasterPid().pid;
    firstPort = postmasterPid().port;
    expect(isProcessRunning(firstServerPid)).toBe(true);
    expect(postmasters()).toEqual([firstServerPid]);
    expect(api.output()).toContain('embedded PostgreSQL running');
    expect(api.output()).toContain('migrations applied');

    const applied = await withWalletDb((client) =>
      client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY id'),
    );
    expect(applied.rows.map((row) => row.name)).toEqual(MIGRATIONS.map((migration) => migration.name));
    const tables = await withWalletDb((client) =>
      client.query<{ name: string }>(`SELECT to_regclass('public.applications')::text AS name`),
    );
    expect(tables.rows).toEqual([{ name: 'applications' }]);

    const kids = await jwksKids(api.port);
    expect(kids).toHaveLength(1);
    kid = kids[0];
  }, 50_000);

  it('lets the CLI borrow the running server (no second server)', async () => {
    const result = await cli(['apps', 'create', '--name', 'embedded app', '--public-key', keyFile]);
    expect(result.code).toBe(0);
    const created = JSON.parse(result.stdout) as { appId: string; clientId: string; keyId: string };
    expect(created.clientId).toBe(created.appId);
    appId = created.appId;
    expect(postmasterPid().pid).toBe(firstServerPid);
    expect(postmasters()).toEqual([firstServerPid]);
    expect(isProcessRunning(firstServerPid)).toBe(true);
  }, 20_000);

  it('stops on SIGTERM with exit 0 and stops the server with it', async () => {
    const running = api as RunningApi;
    expect(await stopApi(running, 'SIGTERM')).toEqual({ code: 0, signal: null });
    api = undefined;
    expect(await waitFor(() => !isProcessRunning(firstServerPid), 5_000)).toBe(true);
    expect(postmasters()).toEqual([]);
    expect(existsSync(path.join(clusterDir, 'postmaster.pid'))).toBe(false);
    expect(running.output()).toContain('"msg":"stopped"');
    // The server was stopped after the pools had closed their sessions, not across them (decision 0005).
    expect(running.output()).not.toMatch(/queue connection error|terminating connection|"level":[456]0/);
  }, 30_000);

  it('restarts on the same DATA_DIR with its keys and data', async () => {
    api = await startApi();
    const serverPid = postmasterPid().pid;
    expect(postmasters()).toEqual([serverPid]);
    // On the port of the last start (DATA_DIR/postgres.port): a borrower's connection string stays valid.
    expect(postmasterPid().port).toBe(firstPort);
    expect(api.output()).not.toContain('migrations applied');
    expect(await jwksKids(api.port)).toEqual([kid]);

    const listed = await cli(['apps', 'list']);
    expect(listed.code).toBe(0);
    const apps = JSON.parse(listed.stdout) as { appId: string; name: string }[];
    expect(apps).toEqual([expect.objectContaining({ appId, name: 'embedded app' })]);
  }, 40_000);

  it('after kill -9 the server survives as an orphan, and the next start reuses it', async () => {
    const running = api as RunningApi;
    const orphan = postmasterPid();
    expect(await stopApi(running, 'SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    api = undefined;
    // Give a dying server time to show itself: it must still be up, alone, with the same pid file.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(isProcessRunning(orphan.pid)).toBe(true);
    expect(postmasters()).toEqual([orphan.pid]);
    expect(postmasterPid()).toEqual(orphan);

    api = await startApi();
    expect(postmasterPid()).toEqual(orphan);
    expect(postmasters()).toEqual([orphan.pid]);
    expect(await jwksKids(api.port)).toEqual([kid]);
    const count = await withWalletDb((client) =>
      client.query<{ n: string }>('SELECT count(*) AS n FROM applications WHERE id = $1', [appId]),
    );
    expect(count.rows).toEqual([{ n: '1' }]);

    // The orphan's only live user now (the killed API's entry is dead): a graceful stop stops that server too.
    expect(await stopApi(api, 'SIGTERM')).toEqual({ code: 0, signal: null });
    api = undefined;
    expect(await waitFor(() => !isProcessRunning(orphan.pid), 5_000)).toBe(true);
    expect(postmasters()).toEqual([]);
  }, 45_000);

  it('the CLI alone starts the server when none runs and stops it again, also on usage errors', async () => {
    const listed = await cli(['apps', 'list']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ appId })]);
    expect(listed.stderr).toContain('embedded PostgreSQL running'); // its logs go to stderr, never stdout
    expect(postmasters()).toEqual([]);

    const unknown = await cli(['frobnicate']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown command 'frobnicate'/);
    expect(postmasters()).toEqual([]);

    const badOption = await cli(['apps', 'list', '--colour', 'red']);
    expect(badOption.code).not.toBe(0);
    expect(badOption.stderr).toMatch(/unknown option '--colour'/);
    expect(await waitFor(() => postmasters().length === 0, 5_000)).toBe(true);
  }, 30_000);

  it('an API whose port is taken exits 1 naming the port, its consumers closed before the server stops', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const child = spawn(process.execPath, [MAIN_JS], { cwd: ROOT, env: env(port), stdio: 'pipe' });
      started.push(child);
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      const exit = await new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      expect(exit).toBe(1);
      expect(output).toContain(`port ${port} is in use: stop the process that listens on it, or set PORT`);
      // Before: every queue's consumer went on polling a server being stopped and logged each failure.
      expect(output).not.toMatch(/database system is shutting down|terminating connection/);
      expect(await waitFor(() => postmasters().length === 0, 5_000)).toBe(true);
    } finally {
      holder.close();
    }
  }, 60_000);

  /**
   * Runs a CLI command in a process group of its own, as at a terminal, and sends the group SIGINT (Ctrl-C) once
   * its stderr shows `when`: how it exited, and whether the signal was sent.
   */
  const interruptCli = async (args: string[], childEnvironment: NodeJS.ProcessEnv, when: string) => {
    const child = spawn(process.execPath, [CLI_JS, ...args], {
      cwd: ROOT,
      env: childEnvironment,
      stdio: 'pipe',
      detached: true,
    });
    started.push(child);
    let stderr = '';
    let interrupted = false;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (!interrupted && stderr.includes(when)) {
        interrupted = true;
        process.kill(-(child.pid as number), 'SIGINT');
      }
    });
    return { exit: await exited, interrupted };
  };

  it('Ctrl-C on a CLI command that started the server ends the command, which stops the server', async () => {
    // While it migrates and starts Nest; the server runs in its own session, out of the group's reach.
    expect(await interruptCli(['ledger', 'verify'], env(), 'embedded PostgreSQL running')).toEqual({
      exit: { code: 130, signal: null },
      interrupted: true,
    });
    expect(await waitFor(() => postmasters().length === 0, 5_000)).toBe(true);
  }, 30_000);

  it('Ctrl-C while a CLI command starts the server waits for the start, then stops the server and exits 130', async () => {
    const ownDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-embedded-int-'));
    chmodSync(ownDir, 0o755);
    try {
      // initdb is under way: the server is not up yet.
      const outcome = await interruptCli(
        ['apps', 'list'],
        childEnv({ DATA_DIR: ownDir, LOG_LEVEL: 'debug' }),
        'initialising embedded PostgreSQL cluster',
      );
      expect(outcome).toEqual({ exit: { code: 130, signal: null }, interrupted: true });
      // Before, the command died at once and the server it went on to start ran on, orphaned.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(postmastersOf(path.join(ownDir, 'postgres'))).toEqual([]);
    } finally {
      for (const pid of postmastersOf(path.join(ownDir, 'postgres'))) process.kill(pid, 'SIGKILL');
      rmSync(ownDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('a process that leaves while others use the server leaves it running for them; the last one stops it', async () => {
    // The CLI's case: a command that had to start the server ends while an API started meanwhile uses it.
    const first = await ensureEmbeddedPostgres({ dataDir, databaseName: 'wallet', ownProcessGroup: false });
    expect(first.startedHere).toBe(true);
    api = await startApi();
    const server = postmasterPid();
    expect(server.pid).toBe(first.pid);
    expect(await first.stop(10_000, 300)).toEqual([api.child.pid]);
    await new Promise((resolve) => setTimeout(resolve, 500)); // a stop would have begun by now
    expect(postmasters()).toEqual([server.pid]);
    const listed = await cli(['apps', 'list']); // a third user, that leaves it running again
    expect(listed.code).toBe(0);
    expect(listed.stderr).not.toContain('left running'); // as it found it: not news at the terminal
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ appId })]);
    expect((await get(api.port, 'health/ready')).status).toBe(200);

    // The worker's case: a worker borrowed the API's server; the API stops, the worker goes on with it.
    const worker = await startWorker();
    const apiRun = api;
    expect(await stopApi(apiRun, 'SIGTERM')).toEqual({ code: 0, signal: null });
    api = undefined;
    expect(apiRun.output()).toContain('embedded PostgreSQL left running for its other users');
    expect(apiRun.output()).toContain(`"users":[${worker.child.pid}]`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(postmasters()).toEqual([server.pid]);
    expect(worker.output()).not.toMatch(/"level":[56]0|ECONNREFUSED|terminating connection/);

    // The worker is the last user now: its stop stops the server.
    expect(await stopApi(worker, 'SIGTERM')).toEqual({ code: 0, signal: null });
    expect(await waitFor(() => postmasters().length === 0, 5_000)).toBe(true);
    expect(worker.output()).not.toMatch(/"level":[56]0/);
    expect(readdirSync(path.join(dataDir, 'postgres.users')).filter((name) => !name.startsWith('.'))).toEqual(
      [],
    );
  }, 60_000);

  it('a process that joins while the last user stops the server waits for it to end and starts a new one', async () => {
    const start = () => ensureEmbeddedPostgres({ dataDir, databaseName: 'wallet', ownProcessGroup: false });
    const leaving = await start();
    const lingering = new pg.Client({ connectionString: leaving.url });
    await lingering.connect();
    // The smart shutdown waits for the lingering session (up to 8 s).
    const stopping = leaving.stop(10_000, 8_000);
    expect(await untilStopping()).toBe(true);
    const joining = start();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await lingering.end(); // the old server ends with its last session
    expect(await stopping).toEqual([]);
    const joined = await joining;
    expect(joined.startedHere).toBe(true);
    expect(joined.pid).not.toBe(leaving.pid);
    expect(postmasters()).toEqual([joined.pid]);
    const client = new pg.Client({ connectionString: joined.url });
    await client.connect();
    expect((await client.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await client.end();
    expect(await joined.stop(10_000)).toEqual([]);
    expect(postmasters()).toEqual([]);
  }, 60_000);

  it('a stop lets the sessions end by themselves first, ends the ones still open after the grace, and the next start takes the same port', async () => {
    const lines: string[] = [];
    const start = () =>
      ensureEmbeddedPostgres({
        dataDir,
        databaseName: 'wallet',
        ownProcessGroup: false,
        log: (line) => lines.push(line),
      });
    let server = await start();
    const session = new pg.Client({ connectionString: server.url });
    await session.connect();
    await session.query('CREATE TABLE stop_probe (n int)');
    await session.query('BEGIN');
    await session.query('INSERT INTO stop_probe VALUES (1)');

    // Smart shutdown: the server says it is stopping, refuses new sessions, and lets this one work and commit.
    const began = Date.now();
    // A grace long enough for the session's end and the shutdown checkpoint on a loaded machine.
    const stopping = server.stop(30_000, 20_000);
    expect(await untilStopping()).toBe(true);
    const latecomer = new pg.Client({ connectionString: server.url });
    await expect(latecomer.connect()).rejects.toMatchObject({ code: '57P03' }); // cannot_connect_now
    await session.query('INSERT INTO stop_probe VALUES (2)');
    await session.query('COMMIT');
    await session.end();
    await stopping;
    expect(Date.now() - began).toBeLessThan(20_000); // it ended with its last session, not at the grace's end
    expect(postmasters()).toEqual([]);
    expect(lines.join('\n')).not.toContain('fast shutdown');

    // A session that stays open past the grace is ended (fast shutdown), and the log says why.
    const port = server.port;
    server = await start();
    expect(server.port).toBe(port); // the last start's port (DATA_DIR/postgres.port)
    // A borrower's pool, as a worker that borrowed the server holds one.
    const borrower = new pg.Pool({ connectionString: server.url, max: 1 });
    borrower.on('error', () => undefined);
    expect((await borrower.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    const lingering = new pg.Client({ connectionString: server.url });
    await lingering.connect();
    const errors: unknown[] = [];
    lingering.on('error', (error) => errors.push(error));
    expect((await lingering.query<{ n: number }>('SELECT n FROM stop_probe ORDER BY n')).rows).toEqual([
      { n: 1 },
      { n: 2 },
    ]);
    await server.stop(10_000, 300);
    expect(postmasters()).toEqual([]);
    expect(await waitFor(() => errors.length > 0, 5_000)).toBe(true);
    expect(errors[0]).toMatchObject({ code: '57P01' }); // admin_shutdown
    expect(lines.join('\n')).toContain('sessions still open after 300 ms; fast shutdown');
    await lingering.end().catch(() => undefined);

    // Started again, on the same port: the borrower's pool, whose session the stop ended, reconnects by itself.
    server = await start();
    expect(server.port).toBe(port);
    expect((await borrower.query<{ n: number }>('SELECT count(*)::int AS n FROM stop_probe')).rows).toEqual([
      { n: 2 },
    ]);
    await borrower.end();
    await server.stop(10_000);
    expect(postmasters()).toEqual([]);
  }, 120_000);
});
