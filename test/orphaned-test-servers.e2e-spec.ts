import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { postmastersOf, ROOT, waitFor } from './support/processes.js';
import { sweepOrphanedTestServers, TEST_SERVER_PREFIX } from './support/orphaned-test-servers.mjs';

/**
 * The global setup's sweep of the embedded servers that earlier test runs left behind (a runner killed with -9
 * leaves its server running, since nothing else stops it). Real servers, started by real processes that then die.
 */
describe('the test harness stops the embedded servers of runs that were killed', () => {
  let parent: string;
  const children: ChildProcess[] = [];

  beforeAll(() => {
    parent = mkdtempSync(path.join(os.tmpdir(), 'wallet-sweep-'));
    chmodSync(parent, 0o755); // the server runs as the postgres user when we are root
  });

  afterAll(async () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const name of ['orphan', 'in-use']) {
      for (const pid of postmastersOf(path.join(parent, `${TEST_SERVER_PREFIX}${name}`, 'postgres'))) {
        process.kill(pid, 'SIGQUIT');
      }
    }
    rmSync(parent, { recursive: true, force: true });
  });

  /** A process that starts the embedded server in `dataDir` as the harness does and stays until killed. */
  const startUser = async (dataDir: string): Promise<{ child: ChildProcess; server: number }> => {
    const module = path.join(ROOT, 'dist/src/common/database/embedded-postgres.js');
    const script = `
      const { ensureEmbeddedPostgres } = await import(${JSON.stringify(module)});
      const handle = await ensureEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, databaseName: 'postgres', ownProcessGroup: false });
      process.on('SIGTERM', async () => { await handle.stop(10_000); process.exit(0); });
      console.log('ready ' + handle.pid);
      setInterval(() => undefined, 60_000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: 'pipe',
    });
    children.push(child);
    let output = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const ready = await waitFor(() => /ready \d+/.test(output) || child.exitCode !== null, 60_000);
    const server = Number(/ready (\d+)/.exec(output)?.[1]);
    if (!ready || !server) throw new Error(`the server did not start: ${output.slice(-2000)}`);
    return { child, server };
  };

  it('stops and removes a server whose runner died; keeps one in use, folders being set up, and other folders', async () => {
    const folder = (name: string) => path.join(parent, `${TEST_SERVER_PREFIX}${name}`);
    const orphan = await startUser(folder('orphan'));
    orphan.child.kill('SIGKILL');
    await waitFor(() => orphan.child.exitCode !== null || orphan.child.signalCode !== null, 5_000);
    expect(postmastersOf(path.join(folder('orphan'), 'postgres'))).toEqual([orphan.server]); // left running

    const inUse = await startUser(folder('in-use'));
    // The sweep runs eleven minutes from now: what was touched until now is past its ten minutes' grace.
    const later = Date.now() + 11 * 60_000;
    const justNow = new Date(later);
    mkdirSync(folder('starting')); // between mkdtemp and its join: no users' register yet
    utimesSync(folder('starting'), justNow, justNow);
    mkdirSync(path.join(folder('joining'), 'postgres.users'), { recursive: true }); // its register, no pid yet
    utimesSync(path.join(folder('joining'), 'postgres.users'), justNow, justNow);
    mkdirSync(folder('abandoned')); // a setup that died before it joined
    const notOurs = path.join(parent, 'wallet-embedded-kept');
    mkdirSync(notOurs);

    const removed = await sweepOrphanedTestServers(parent, later);

    expect(removed.sort()).toEqual([folder('abandoned'), folder('orphan')]);
    expect(postmastersOf(path.join(folder('orphan'), 'postgres'))).toEqual([]);
    expect(existsSync(folder('orphan'))).toBe(false);
    expect(postmastersOf(path.join(folder('in-use'), 'postgres'))).toEqual([inUse.server]);
    expect(existsSync(folder('in-use'))).toBe(true);
    expect(existsSync(folder('starting'))).toBe(true);
    expect(existsSync(folder('joining'))).toBe(true);
    expect(existsSync(notOurs)).toBe(true);

    // Once its user has stopped it and gone, the folder left behind goes on the next sweep.
    inUse.child.kill('SIGTERM');
    await waitFor(() => inUse.child.exitCode !== null, 20_000);
    expect(inUse.child.exitCode).toBe(0);
    expect(await sweepOrphanedTestServers(parent, Date.now() + 11 * 60_000)).toEqual([folder('in-use')]);
  }, 180_000);
});
