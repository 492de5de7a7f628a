import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { afterEach } from '@jest/globals';
import { waitUntil } from '../../src/common/database/embedded-postgres-server.js';

/** The repository root (tests run from it); dist/ is built by the global setup. */
export { freePort } from './free-port.mjs';

export const ROOT = process.cwd();
export const MAIN_JS = path.join(ROOT, 'dist/src/main.js');
export const CLI_JS = path.join(ROOT, 'dist/src/cli.js');
export const WORKER_JS = path.join(ROOT, 'dist/src/worker.js');

/**
 * The environment of a spawned entry point: the inherited one without the
 * database, queue and test-harness settings, plus `overrides`.
 */
export function childEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name === 'DATABASE_URL' || name === 'REDIS_URL' || name.startsWith('TEST_')) continue;
    if (name === 'NODE_OPTIONS' || name.startsWith('JEST_')) continue;
    env[name] = value;
  }
  return { ...env, ...overrides };
}

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The children runNode started that are still running, each with what ends it. A test that runs out of time
 * goes on in the background: after each test, its children are killed and their runNode promises rejected, so
 * that it cannot run or start more CLI commands that write into the next tests.
 */
const running = new Map<ChildProcess, () => Promise<void>>();

afterEach(async () => {
  await Promise.all([...running.values()].map((end) => end()));
});

/**
 * Runs `node script args…` to completion (killed after `timeoutMs`). A child still running when the test that
 * started it ends is killed, and the promise is rejected.
 */
export function runNode(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
  /**
   * `detached`: the script leads its own process group, and the timeout kills the whole group (what it started in
   * its group too); `onSpawn` gets the child, for a teardown that must end it when the test does not.
   */
  options: { detached?: boolean; onSpawn?: (child: ChildProcess) => void } = {},
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd: ROOT,
      env,
      stdio: 'pipe',
      detached: options.detached ?? false,
    });
    options.onSpawn?.(child);
    const kill = (): void => {
      if (options.detached && child.pid) killGroup(child.pid);
      else child.kill('SIGKILL');
    };
    let testEnded = false;
    const closed = new Promise<void>((done) => child.once('close', () => done()));
    running.set(child, () => {
      testEnded = true;
      running.delete(child);
      kill();
      // 'close' waits for the child's pipes, which a process it started may still hold: wait for the child's own
      // exit at most a few seconds more, so the hook never hangs on a grandchild (found in review).
      return Promise.race([closed, new Promise<void>((done) => setTimeout(done, 5_000).unref())]);
    });
    child.stdin.end();
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(kill, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      running.delete(child);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      if (testEnded) reject(new Error(`${path.basename(script)} killed: the test that started it ended`));
      else resolve({ code, signal, stdout, stderr });
    });
  });
}

/** What a CLI command runs against: a database and a DATA_DIR (a TestApp is one). */
export interface CliTarget {
  databaseUrl: string;
  dataDir: string;
}

/** `node dist/src/cli.js args…` on `target`'s database and DATA_DIR, with LOG_LEVEL silent and `env` besides. */
export const runCli = (
  target: CliTarget,
  args: string[],
  env: Record<string, string> = {},
): Promise<ProcessResult> =>
  runNode(
    CLI_JS,
    args,
    childEnv({ DATABASE_URL: target.databaseUrl, DATA_DIR: target.dataDir, LOG_LEVEL: 'silent', ...env }),
  );

/** The JSON a CLI command that must succeed prints (runCli); throws with its stderr when it exits other than 0. */
export async function cliJson<T>(
  target: CliTarget,
  args: string[],
  env: Record<string, string> = {},
): Promise<T> {
  const result = await runCli(target, args, env);
  if (result.code !== 0) throw new Error(`cli ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** True while `pid` exists and is not a zombie (a zombie has exited and only waits to be reaped). */
export function isProcessRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/**
 * PIDs of live postmasters serving `clusterDir`: processes whose command line has `-D clusterDir`. A backend
 * the postmaster has just forked still shows its parent's command line until it renames itself, so a process
 * whose parent is one of the matches is a backend, not a second server.
 */
export function postmastersOf(clusterDir: string): number[] {
  const folder = realFolder(clusterDir);
  return postmastersWhere((dir) => dir === clusterDir || dir === folder);
}

/** The folder `dir` names with its symbolic links followed; as spelt (resolved) when it is not there any more. */
function realFolder(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/**
 * PIDs of live postmasters whose cluster folder (`-D`, resolved as spelt or with its symbolic links followed)
 * passes `match`, as postmastersOf finds them.
 */
export function postmastersWhere(match: (clusterDir: string) => boolean): number[] {
  const matches = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const at = argv.indexOf('-D');
      const dir = argv[at + 1] ?? '';
      if (at < 0 || !(match(path.resolve(dir)) || match(realFolder(dir))) || !isProcessRunning(Number(entry)))
        continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      matches.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* exited while we looked */
    }
  }
  return [...matches].filter(([, parent]) => !matches.has(parent)).map(([pid]) => pid);
}

export const waitFor = (
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  stepMs = 100,
): Promise<boolean> => waitUntil(check, timeoutMs, stepMs);

/** PIDs of the live processes whose parent is `parent` and whose command line contains `text`. */
export function childrenOf(parent: number, text: string): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== parent) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.some((arg) => arg.includes(text)) && isProcessRunning(Number(entry)))
        children.push(Number(entry));
    } catch {
      /* exited while we looked */
    }
  }
  return children.sort((a, b) => a - b);
}

/** SIGKILL to the process group `leader` leads, if it is still there. */
export function killGroup(leader: number): void {
  try {
    process.kill(-leader, 'SIGKILL');
  } catch {
    /* gone */
  }
}
