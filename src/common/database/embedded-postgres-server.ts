import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs, readFileSync, statSync } from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { EmbeddedPostgresError, type OsUser, type PostgresBinaries } from './embedded-postgres-placement.js';

/**
 * The embedded server as processes and files: its cluster's initdb, the server binary started and watched, its
 * postmaster.pid read, signals sent. The lifecycle (find or start, users, stop) is embedded-postgres.ts's.
 */

export interface PidFile {
  pid: number;
  dataDir: string;
  port: number;
  status: string;
}

function parsePidFile(text: string): PidFile {
  const lines = text.split('\n');
  return {
    pid: Number(lines[0]),
    dataDir: lines[1],
    port: Number(lines[3]),
    status: (lines[7] ?? '').trim(),
  };
}

export async function readPidFile(clusterDir: string): Promise<PidFile | undefined> {
  return fs.readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').then(parsePidFile, () => undefined);
}

/** The live server of `clusterDir` by its postmaster.pid, read synchronously (for an `exit` handler). */
export function liveServerSync(clusterDir: string): PidFile | undefined {
  try {
    const server = parsePidFile(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8'));
    return isServerAlive(server, clusterDir) ? server : undefined;
  } catch {
    return undefined;
  }
}

/** Fields 3 and 22 of /proc/<pid>/stat: its state, and when it started (clock ticks since boot). */
export function procStat(pid: number): { state: string; start: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], start: fields[19] ?? '' };
  } catch {
    return undefined;
  }
}

/** A process state of /proc that is no longer running: zombie or dead. */
export const isDead = (state: string): boolean => state === 'Z' || state === 'X';

/**
 * The process `pid` runs (not a zombie) and, when a start time was recorded (procStat's `start`), is the one that
 * recorded it, so that a PID the kernel has given to another process is not taken for it.
 */
export function isAlive(pid: number, recordedStart: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (recordedStart) {
    const stat = procStat(pid);
    return stat !== undefined && stat.start === recordedStart && !isDead(stat.state);
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whose server the process a postmaster.pid names is: `this` data directory's; `another` one's (or no server at
 * all: a PID the kernel gave to another program); `none` (not running); or `unknown`, a running PostgreSQL server
 * whose folder could not be found out (its working directory unreadable, a relative -D).
 */
export type ServerOwner = 'this' | 'another' | 'none' | 'unknown';

/** The device and inode of a folder (however it is spelt: links followed), undefined when it cannot be reached. */
function folderIdentity(dir: string): string | undefined {
  try {
    const stat = statSync(dir);
    return stat.isDirectory() ? `${stat.dev}:${stat.ino}` : undefined;
  } catch {
    return undefined;
  }
}

const POSTGRES_NAMES = new Set(['postgres', 'postmaster']);

/**
 * Whether the process in `pidFile` is the server of `clusterDir`, compared by the folder itself, never by its
 * spelling: a DATA_DIR reached through a symbolic link (or a bind mount) is the same folder (decision 0101).
 */
export function serverOwner(pidFile: PidFile, clusterDir: string): ServerOwner {
  const { pid } = pidFile;
  if (!Number.isInteger(pid) || pid <= 0) return 'none';
  const stat = procStat(pid);
  if (!stat || isDead(stat.state)) return 'none';
  let argv: string[];
  let name: string;
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    name = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return procStat(pid) ? 'unknown' : 'none';
  }
  if (!POSTGRES_NAMES.has(name) && !POSTGRES_NAMES.has(path.basename(argv[0] ?? ''))) return 'another';
  const here = folderIdentity(clusterDir);
  if (!here) return 'unknown';
  // The postmaster works in its data directory (it changes into it before it writes postmaster.pid), and the
  // kernel's link to that folder does not depend on how -D spelt it.
  const cwd = folderIdentity(`/proc/${pid}/cwd`);
  if (cwd) return cwd === here ? 'this' : 'another';
  // Its working directory cannot be read (another user's process): its -D, when absolute and still there.
  const at = argv.indexOf('-D');
  const dataDir = at >= 0 ? argv[at + 1] : undefined;
  const there = dataDir && path.isAbsolute(dataDir) ? folderIdentity(dataDir) : undefined;
  if (there) return there === here ? 'this' : 'another';
  return 'unknown';
}

/** A server is alive only if its PID exists, is not a zombie, and it is a server of this data directory. */
export function isServerAlive(pidFile: PidFile, clusterDir: string): boolean {
  return serverOwner(pidFile, clusterDir) === 'this';
}

/** Polls `check` every `stepMs` until it holds (true) or `timeoutMs` has passed (false). */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  stepMs = 50,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

/** The environment of initdb and the server: locale and paths only, never the service's secrets or PG* settings. */
function serverEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { LC_MESSAGES: 'C' };
  for (const [name, value] of Object.entries(process.env)) {
    if (name === 'PATH' || name === 'LANG' || name === 'TZ' || name === 'TMPDIR' || name.startsWith('LC_'))
      env[name] = value;
  }
  env.LC_MESSAGES = 'C';
  return env;
}

export const keepLast = (lines: string[], chunk: string, max = 40) => {
  for (const line of chunk.split('\n').filter(Boolean)) {
    lines.push(line);
    if (lines.length > max) lines.shift();
  }
};

const cannotRun = (file: string, user: OsUser | undefined, error: unknown) =>
  new EmbeddedPostgresError(
    `embedded PostgreSQL: cannot run ${file}${user ? ` as the OS user ${user.name}` : ''} (${(error as NodeJS.ErrnoException).code ?? String(error)}): ${user ? `let ${user.name} reach it, run the service as another user` : 'run npm install again'}, or set DATABASE_URL`,
  );

/** Runs initdb into the empty folder `pgdata`, as `user` when root. */
async function initdb(
  binaries: PostgresBinaries,
  pgdata: string,
  password: string,
  user: OsUser | undefined,
  log: (line: string) => void,
  ownProcessGroup: boolean,
): Promise<void> {
  // The password reaches initdb through a file only its user can read, beside the new cluster.
  const passwordFile = path.join(path.dirname(pgdata), `postgres.pwfile-${randomBytes(4).toString('hex')}`);
  await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600, flag: 'wx' });
  try {
    if (user) await fs.chown(passwordFile, user.uid, user.gid);
    const args = [
      `--pgdata=${pgdata}`,
      '--auth=scram-sha-256',
      '--username=postgres',
      `--pwfile=${passwordFile}`,
      '--lc-messages=C',
      '--encoding=UTF8',
    ];
    const output: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const child = spawn(binaries.initdb, args, {
        // Out of reach of a terminal's Ctrl-C, as the server: the process defers it until the start is done.
        detached: ownProcessGroup,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: serverEnv(),
        ...(user ? { uid: user.uid, gid: user.gid } : {}),
      });
      const collect = (chunk: Buffer) => {
        keepLast(output, chunk.toString('utf8'));
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) log(line);
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.on('error', (error) => reject(cannotRun(binaries.initdb, user, error)));
      child.on('close', (code, signal) => {
        if (code === 0) resolve();
        else
          reject(
            new EmbeddedPostgresError(
              `embedded PostgreSQL: initdb failed in ${pgdata} (${signal ?? `exit ${code}`}): ${output.at(-1) ?? 'no output'}`,
              output,
            ),
          );
      });
    });
  } finally {
    await fs.rm(passwordFile, { force: true });
  }
}

/**
 * Starts the server binary on `clusterDir` and resolves with its PID once postmaster.pid says "ready". Rejects
 * (with the server's last words) when it exits first, e.g. because another starter won the race.
 */
export function startServer(
  binaries: PostgresBinaries,
  clusterDir: string,
  port: number,
  user: OsUser | undefined,
  ownProcessGroup: boolean,
  onOutput: (chunk: string) => void,
): Promise<number> {
  const args = [
    '-D',
    clusterDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=200',
    // The server's log goes to the service log (LOG_LEVEL=debug): no DETAIL (a unique violation's quotes the
    // row's values: tax ids), no STATEMENT lines (parameters), as the service's own lines carry none.
    '-c',
    'log_error_verbosity=terse',
    '-c',
    'log_min_error_statement=panic',
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(binaries.postgres, args, {
      // detached: its own session, so the terminal's SIGINT/SIGHUP reach the service only (decision 0023).
      detached: ownProcessGroup,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: serverEnv(),
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearInterval(poll);
      clearTimeout(timer);
      outcome();
    };
    child.stderr.setEncoding('utf8').on('data', onOutput);
    child.on('error', (error) => settle(() => reject(cannotRun(binaries.postgres, user, error))));
    child.on('exit', (code, signal) =>
      settle(() => reject(new Error(`the server exited (${signal ?? `exit ${code}`}) before it was ready`))),
    );
    const poll = setInterval(() => {
      void readPidFile(clusterDir).then((current) => {
        if (!current || current.pid !== child.pid || current.status !== 'ready') return;
        settle(() => {
          // The server outlives this process when it is not stopped (kill -9): the next start adopts it.
          child.unref();
          (child.stderr as unknown as net.Socket).unref();
          resolve(current.pid);
        });
      });
    }, 25);
    const timer = setTimeout(
      () =>
        settle(() => {
          child.kill('SIGQUIT');
          reject(new Error('the server was not ready within 60 s'));
        }),
      60_000,
    );
  });
}

/** A staging folder of an earlier version's name (no PID in it) older than this is a leftover. */
const STAGING_GRACE_MS = 10 * 60_000;

/**
 * Initialises the cluster on first use: initdb beside the target, renamed into place, so an interrupted initdb
 * never leaves a half cluster and PG_VERSION proves a finished one.
 */
export async function initialiseCluster(
  binaries: PostgresBinaries,
  clusterDir: string,
  password: string,
  user: OsUser | undefined,
  log: (line: string) => void,
  ownProcessGroup = false,
): Promise<void> {
  if (existsSync(path.join(clusterDir, 'PG_VERSION'))) return;
  const clusterHome = path.dirname(clusterDir);
  const prefix = `${path.basename(clusterDir)}.init-`;
  await fs.mkdir(clusterHome, { recursive: true, mode: 0o755 });
  // A staging folder is named after the process that makes it (PID and start time): only those of processes that
  // have gone are leftovers. One another process's initdb is writing stays (decision 0101); the first rename wins.
  for (const entry of await fs.readdir(clusterHome)) {
    if (!entry.startsWith(prefix)) continue;
    const full = path.join(clusterHome, entry);
    const owner = /^(\d+)-(\d*)-[0-9a-f]+$/.exec(entry.slice(prefix.length));
    const leftover = owner
      ? !isAlive(Number(owner[1]), owner[2])
      : // an earlier version's name, without its maker: a leftover once older than any initdb takes
        Date.now() - ((await fs.stat(full).catch(() => undefined))?.mtimeMs ?? 0) > STAGING_GRACE_MS;
    if (leftover) await fs.rm(full, { recursive: true, force: true });
  }
  const staging = path.join(
    clusterHome,
    `${prefix}${process.pid}-${procStat(process.pid)?.start ?? ''}-${randomBytes(4).toString('hex')}`,
  );
  log(`initialising embedded PostgreSQL cluster in ${clusterDir}`);
  await fs.mkdir(staging, { mode: 0o700 });
  try {
    if (user) await fs.chown(staging, user.uid, user.gid);
    await initdb(binaries, staging, password, user, log, ownProcessGroup);
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    throw error;
  }
  await fs.rename(staging, clusterDir).catch(async (error: NodeJS.ErrnoException) => {
    // Another process initialised concurrently: keep theirs.
    await fs.rm(staging, { recursive: true, force: true });
    if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) throw error;
  });
}

/** Sends `name` to `pid`: false when the process is gone. */
export function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}
