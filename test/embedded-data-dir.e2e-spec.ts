import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import {
  ensureEmbeddedPostgres,
  type EmbeddedPostgresHandle,
} from '../src/common/database/embedded-postgres.js';
import { isServerAlive, readPidFile, type PidFile } from '../src/common/database/embedded-postgres-server.js';
import { childEnv, CLI_JS, postmastersOf, ROOT, runNode, waitFor } from './support/processes.js';

/**
 * DATA_DIR as the embedded PostgreSQL finds it (decision 0101): one folder however it is spelt (a symbolic link to
 * it borrows the running server and never takes its postmaster.pid for stale), two first starts at once on one
 * new folder (both end up on one cluster), and a folder it may not write (the real error named). Real processes
 * and real servers throughout.
 */
describe('embedded PostgreSQL: the DATA_DIR folder', () => {
  const IS_ROOT = process.getuid?.() === 0;
  let parent: string;
  const handles: EmbeddedPostgresHandle[] = [];

  /** `dir`, mode 0755 whatever the umask: the server runs as the postgres user when we are root. */
  const reachable = (dir: string): string => {
    chmodSync(dir, 0o755);
    return dir;
  };

  beforeAll(() => {
    parent = reachable(mkdtempSync(path.join(os.tmpdir(), 'wallet-datadir-')));
  });

  afterAll(async () => {
    for (const handle of handles) await handle.stop(5_000, 500);
    for (const name of ['real', 'fresh']) {
      for (const pid of postmastersOf(path.join(parent, name, 'postgres'))) process.kill(pid, 'SIGQUIT');
    }
    await waitFor(
      () =>
        ['real', 'fresh'].every((name) => postmastersOf(path.join(parent, name, 'postgres')).length === 0),
      5_000,
    );
    rmSync(parent, { recursive: true, force: true });
  });

  const folder = (name: string): string => {
    mkdirSync(path.join(parent, name));
    return reachable(path.join(parent, name));
  };

  const env = (dataDir: string) => childEnv({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });

  it("a CLI reaching the running server's DATA_DIR through a symbolic link borrows that server and leaves its postmaster.pid", async () => {
    const dataDir = folder('real');
    const held = await ensureEmbeddedPostgres({ dataDir, databaseName: 'wallet' });
    handles.push(held);
    const clusterDir = path.join(dataDir, 'postgres');
    const pidFile = path.join(clusterDir, 'postmaster.pid');
    const before = readFileSync(pidFile, 'utf8');
    const link = path.join(parent, 'link');
    symlinkSync(dataDir, link);

    const result = await runNode(CLI_JS, ['apps', 'list'], env(link), 30_000);
    expect(result.stderr).not.toContain('removing stale postmaster.pid');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([]);
    // The live server's lock file is untouched, it is the only server of the folder, and it still answers.
    expect(existsSync(pidFile)).toBe(true);
    expect(readFileSync(pidFile, 'utf8').split('\n')[0]).toBe(before.split('\n')[0]);
    expect(postmastersOf(clusterDir)).toEqual([held.pid]);
    // The helpers the service and the test harness's sweep use tell the folder, not its spelling.
    const server = (await readPidFile(clusterDir)) as PidFile;
    expect(isServerAlive(server, path.join(link, 'postgres'))).toBe(true);
    expect(isServerAlive(server, parent)).toBe(false);
    const client = new pg.Client({ connectionString: held.url });
    await client.connect();
    try {
      expect((await client.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await client.end();
    }
  }, 40_000);

  it('two first starts at once on a new DATA_DIR both come up, on one cluster', async () => {
    const dataDir = folder('fresh');
    const migrate = path.join(ROOT, 'dist/src/migrate.js');
    const [first, second] = await Promise.all([
      runNode(migrate, [], env(dataDir), 45_000),
      runNode(migrate, [], env(dataDir), 45_000),
    ]);
    expect([first.stderr + first.stdout, second.stderr + second.stdout].join('\n')).not.toContain(
      'initdb failed',
    );
    expect([first.code, second.code]).toEqual([0, 0]);
    expect(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);
    // No staging folder is left behind, and the last of the two stopped the server.
    expect(readdirSync(dataDir).filter((name) => name.startsWith('postgres.init-'))).toEqual([]);
    expect(await waitFor(() => postmastersOf(path.join(dataDir, 'postgres')).length === 0, 5_000)).toBe(true);
  }, 60_000);

  (IS_ROOT ? it : it.skip)(
    'a DATA_DIR the service may not write is reported with the real error (EACCES), not ENOENT',
    async () => {
      // Root passes every mode: the CLI runs as nobody, on a root-owned 0755 folder it can read and not write.
      const dataDir = folder('not-writable');
      const result = await new Promise<{ code: unknown; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [CLI_JS, 'apps', 'list'],
          { cwd: ROOT, env: env(dataDir), uid: 65534, gid: 65534, timeout: 20_000 },
          (error, _stdout, stderr) => resolve({ code: error ? error.code : 0, stderr }),
        );
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`cannot use DATA_DIR ${dataDir} (EACCES)`);
      expect(result.stderr).not.toContain('ENOENT');
    },
    25_000,
  );
});
