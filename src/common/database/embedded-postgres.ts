import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import {
  EmbeddedPostgresError,
  packageBinaries,
  placeCluster,
  postgresOsUser,
  reachableBinaries,
  RUNTIME_DIR,
} from './embedded-postgres-placement.js';
import {
  initialiseCluster,
  isServerAlive,
  keepLast,
  liveServerSync,
  readPidFile,
  serverOwner,
  signal,
  startServer,
  waitUntil,
  type PidFile,
} from './embedded-postgres-server.js';
import { EmbeddedServerUsers } from './embedded-postgres-users.js';

export { EmbeddedPostgresError } from './embedded-postgres-placement.js';

/**
 * Lifecycle of the embedded PostgreSQL server (the real binaries shipped by
 * the `embedded-postgres` package, run by this module itself) used when
 * DATABASE_URL is unset.
 *
 * Invariants:
 * - one server per data directory: a live server (found through postmaster.pid,
 *   checked against /proc) is reused, never doubled;
 * - a cluster is only ever created by renaming a finished initdb into place, so
 *   PG_VERSION is a trustworthy "initialised" marker;
 * - the last of the processes using it stops it (embedded-postgres-users.ts);
 * - as root the server runs as the OS user postgres, with binaries and cluster
 *   where that user can reach them (embedded-postgres-placement.ts).
 */

export interface EmbeddedPostgresOptions {
  /** The directory that holds `postgres/` (or a pointer to the cluster) and the credentials file. */
  dataDir: string;
  databaseName: string;
  /**
   * Start the server in its own session (process group), so a Ctrl-C at the terminal reaches only the process,
   * which leaves the server (the last user stops it); every role of the service does. False keeps it in the
   * caller's group (the test harness, its sole user), so an interrupt takes it down together with its starter.
   */
  ownProcessGroup?: boolean;
  /** Root-owned folder for binaries and clusters the OS user postgres cannot reach where they are. */
  runtimeDir?: string;
  /** Called with server log lines (already stripped of secrets). */
  log?: (line: string) => void;
}

export interface EmbeddedPostgresHandle {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** The cluster's folder: `DATA_DIR/postgres`, or the one `DATA_DIR/postgres.location` names. */
  readonly clusterDir: string;
  /** True when the cluster lives outside DATA_DIR (running as root, DATA_DIR unreachable for postgres). */
  readonly relocated: boolean;
  /** Earlier relocated clusters of this DATA_DIR path, kept and not used (ClusterPlace.earlierClusters). */
  readonly earlierClusters?: readonly string[];
  /** True when this process started the server; false when it found it running. */
  readonly startedHere: boolean;
  /**
   * Leaves the server: this process no longer uses it. The last of its users stops it (never hangs): a smart
   * shutdown, which lets the sessions end by themselves, for up to `graceMs`; then a fast one, for up to
   * `timeoutMs`; then SIGQUIT. Answers the PIDs of the other users it was left running for (empty when it was
   * stopped, or was not running any more). Once only: later calls do nothing.
   */
  stop(timeoutMs?: number, graceMs?: number): Promise<number[]>;
  /** The same, synchronous, for an `exit` handler: the last user asks the server for a fast shutdown. */
  stopAtExit(): void;
}

/**
 * How long a stop waits for the server's sessions to end by themselves (smart shutdown) before it ends them
 * (fast shutdown): the closing process's own pools end theirs within milliseconds.
 */
const SMART_SHUTDOWN_GRACE_MS = 2_000;

/** Binds 127.0.0.1:`port` for a moment (0: any free port): the port it got, or undefined when it is taken. */
async function bindable(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

async function freePort(): Promise<number> {
  const port = await bindable(0);
  if (port === undefined) throw new Error('no free port on 127.0.0.1');
  return port;
}

/** Where the port of the last server started on a DATA_DIR is kept, so the next start takes it again. */
const PORT_FILE = 'postgres.port';

/**
 * The port of the last server started on this DATA_DIR when it is free again, else undefined. A stable port keeps
 * a borrower's connection string valid across the owner's restarts: a worker that borrowed the server reconnects
 * to the new one instead of knocking at a closed port.
 */
async function rememberedFreePort(dataDir: string): Promise<number | undefined> {
  const port = Number((await fs.readFile(path.join(dataDir, PORT_FILE), 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(port) || port < 1024 || port > 65_535) return undefined;
  return bindable(port);
}

async function readOrCreatePassword(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'postgres.credentials');
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    const password = randomBytes(18).toString('base64url');
    await fs.writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' }).catch((error: unknown) => {
      // Written meanwhile by another start: that one is the password. Anything else (EACCES, EROFS) is the cause.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    });
    return (await fs.readFile(file, 'utf8')).trim();
  }
}

/**
 * Finds the embedded server for `dataDir` or starts it (initialising the
 * cluster on first use), and makes sure the application database exists.
 * Operator-fixable failures throw EmbeddedPostgresError with a one-line message.
 */
export async function ensureEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgresHandle> {
  const given = path.resolve(options.dataDir);
  let dataDir: string;
  let password: string;
  try {
    await fs.mkdir(given, { recursive: true, mode: 0o755 });
    // The folder, not its spelling: a DATA_DIR reached through a symbolic link has the same cluster, server, users
    // and relocated home as the folder itself (decision 0101).
    dataDir = await fs.realpath(given);
    password = await readOrCreatePassword(dataDir);
  } catch (error) {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL: cannot use DATA_DIR ${given} (${(error as NodeJS.ErrnoException).code ?? String(error)}): make it writable for the user running the service, choose another DATA_DIR, or set DATABASE_URL`,
    );
  }
  // A user before it looks for the server: a last user leaving from now on leaves it running for this process.
  const users = new EmbeddedServerUsers(dataDir);
  await users.join();
  try {
    return await findOrStart(options, dataDir, password, users);
  } catch (error) {
    await users.leave(async () => undefined); // a server it started stays up; the next start reuses it
    throw error;
  }
}

async function findOrStart(
  options: EmbeddedPostgresOptions,
  dataDir: string,
  password: string,
  users: EmbeddedServerUsers,
): Promise<EmbeddedPostgresHandle> {
  const log = options.log ?? (() => undefined);
  const runtimeDir = options.runtimeDir ?? RUNTIME_DIR;
  // PostgreSQL refuses root: as root the server runs as the OS user postgres.
  const user = process.getuid?.() === 0 ? await postgresOsUser() : undefined;
  const source = await packageBinaries();
  const binaries = user ? await reachableBinaries(user, source, runtimeDir, log) : source;
  const { clusterDir, relocated, earlierClusters } = await placeCluster(dataDir, user, runtimeDir, log);
  const recentLog: string[] = [];
  const onOutput = (chunk: string) => {
    keepLast(recentLog, chunk);
    for (const line of chunk.split('\n').filter(Boolean)) log(line);
  };

  await initialiseCluster(binaries, clusterDir, password, user, log, options.ownProcessGroup ?? false);

  let startedHere = false;
  let server: PidFile | undefined;
  for (let attempt = 0; attempt < 5 && !server; attempt++) {
    const existing = await readPidFile(clusterDir);
    const owner = existing ? serverOwner(existing, clusterDir) : 'none';
    if (existing && owner === 'this') {
      // Starting up, or stopping (its last user left just before this process joined): wait until it is
      // ready, or gone, and then start a new one.
      let status = existing.status;
      await waitUntil(async () => {
        const current = await readPidFile(clusterDir);
        status = current?.pid === existing.pid ? current.status : 'gone';
        return status === 'ready' || status === 'gone' || !isServerAlive(existing, clusterDir);
      }, 30_000);
      if (status === 'ready') {
        server = (await readPidFile(clusterDir)) ?? existing;
        log(`reusing embedded PostgreSQL already running (pid ${server.pid}, port ${server.port})`);
        break;
      }
      if (isServerAlive(existing, clusterDir))
        await waitUntil(() => !isServerAlive(existing, clusterDir), 30_000);
      continue;
    }
    if (existing && owner === 'unknown') {
      // Never the lock file of a server that may be this folder's: removing it makes that server stop itself.
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: ${path.join(clusterDir, 'postmaster.pid')} names pid ${existing.pid}, a running PostgreSQL server this process cannot tell apart from the server of ${clusterDir}: run the service as the user that started it, stop that server if it is not this folder's, or set DATABASE_URL`,
      );
    }
    if (existing) {
      log(
        `removing stale postmaster.pid (pid ${existing.pid} ${owner === 'none' ? 'is not running' : "is not this data directory's server"})`,
      );
      await fs.rm(path.join(clusterDir, 'postmaster.pid'), { force: true });
    }
    // The last start's port when it is free (a retry after a lost race takes any free one).
    const port = (attempt === 0 ? await rememberedFreePort(dataDir) : undefined) ?? (await freePort());
    try {
      await startServer(binaries, clusterDir, port, user, options.ownProcessGroup ?? false, onOutput);
      server = await readPidFile(clusterDir);
      startedHere = true;
      await fs.writeFile(path.join(dataDir, PORT_FILE), `${port}\n`).catch(() => undefined);
    } catch (error) {
      if (error instanceof EmbeddedPostgresError) throw error;
      // Lost a race with another starter, or a real failure: look again, then report the server's own words.
      log(`embedded PostgreSQL did not start on port ${port}: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 200 * (attempt + 1)));
    }
  }
  if (!server) {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL could not be started in ${clusterDir}: ${recentLog.at(-1) ?? 'no output'}`,
      recentLog.slice(-10),
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
        .catch(async (error: unknown) => {
          // Created concurrently: 42P04, or 23505 when both CREATE DATABASE reached the catalogue at once.
          const code = (error as { code?: string }).code;
          if (code === '42P04') return;
          const created = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [
            options.databaseName,
          ]);
          if (code !== '23505' || created.rowCount === 0) throw error;
        });
    }
  } finally {
    await admin.end();
  }

  const running = server;
  let left = false;
  return {
    url: `${base}/${encodeURIComponent(options.databaseName)}`,
    port: running.port,
    pid: running.pid,
    clusterDir,
    relocated,
    ...(earlierClusters ? { earlierClusters } : {}),
    startedHere,
    async stop(timeoutMs = 15_000, graceMs = SMART_SHUTDOWN_GRACE_MS) {
      if (left) return [];
      left = true;
      let stopping: PidFile | undefined;
      const others = await users.leave(async () => {
        // The last user: the smart shutdown starts before another process can join (it will see it stopping).
        const current = await readPidFile(clusterDir);
        if (!current || !isServerAlive(current, clusterDir) || !signal(current.pid, 'SIGTERM')) return;
        stopping = current;
        await waitUntil(
          async () =>
            (await readPidFile(clusterDir))?.status !== 'ready' || !isServerAlive(current, clusterDir),
          1_000,
          5,
        );
      });
      if (others.length > 0) {
        log(`embedded PostgreSQL left running for its other users (pids ${others.join(', ')})`);
        return others;
      }
      const server = stopping as PidFile | undefined;
      if (!server) return [];
      const stopsWithin = (ms: number) => waitUntil(() => !isServerAlive(server, clusterDir), ms);
      // Smart shutdown first: no new connection, and the server ends once its sessions have. A pool that has
      // just been ended (pg-pool's end() resolves once its clients have sent Terminate, not once their sockets
      // closed) has sessions still ending; a fast shutdown at once would race them and end some with FATAL
      // 57P01, which their pools report as connection errors of a clean stop.
      if (await stopsWithin(Math.min(graceMs, timeoutMs))) return [];
      // Sessions still open (a psql, or a process that is not a user): fast shutdown rolls back their open
      // transactions and disconnects them.
      log(`embedded PostgreSQL (pid ${server.pid}): sessions still open after ${graceMs} ms; fast shutdown`);
      if (!signal(server.pid, 'SIGINT')) return [];
      if (await stopsWithin(timeoutMs)) return [];
      log(`embedded PostgreSQL (pid ${server.pid}) did not stop in ${timeoutMs} ms; sending SIGQUIT`);
      signal(server.pid, 'SIGQUIT');
      return [];
    },
    stopAtExit() {
      if (left) return;
      left = true;
      if (!users.leaveSync()) return;
      const current = liveServerSync(clusterDir);
      if (current) signal(current.pid, 'SIGINT');
    },
  };
}
