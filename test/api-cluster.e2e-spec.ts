import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  childEnv,
  childrenOf,
  freePort,
  isProcessRunning,
  MAIN_JS,
  postmastersOf,
  ROOT,
  waitFor,
} from './support/processes.js';
import { TEST_BASE_URL } from './support/test-app.js';

interface Primary {
  child: ChildProcess;
  port: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface AccessLine {
  msg: string;
  pid?: number;
  slot?: number;
  req: { id: string };
  res: { statusCode: number | null };
}

const PROCESSES = 3;
/** A path no route serves: its 404 is access-logged at info with the pid of the process that answered. */
const PROBE = '/v1/cluster-probe';

/**
 * `API_PROCESSES=3` as an operator runs it: `node dist/src/main.js` on the embedded database (the primary
 * starts PostgreSQL and migrates, then forks three node:cluster processes on one port). The suite reads the
 * access lines (each carries the pid of the process that answered) to see the connections spread, SIGKILLs
 * one API process and sees it replaced while requests keep succeeding, and stops the whole with SIGTERM (the
 * primary alone, as a supervisor does) and with SIGINT to the process group (Ctrl-C in a terminal): exit 0,
 * nothing on stderr, no API process and no PostgreSQL server left.
 */
describe('API_PROCESSES=3: one port, spread, replaced, stopped cleanly', () => {
  let dataDir: string;
  const spawned: ChildProcess[] = [];
  const seenPids = new Set<number>();

  const start = async (settings: Record<string, string> = {}): Promise<Primary> => {
    const port = await freePort();
    const child = spawn(process.execPath, [MAIN_JS], {
      cwd: ROOT,
      env: childEnv({
        DATA_DIR: dataDir,
        PORT: String(port),
        API_PROCESSES: String(PROCESSES),
        LOG_LEVEL: 'info',
        PUBLIC_BASE_URL: TEST_BASE_URL,
        ...settings,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so the test can send a terminal's Ctrl-C to all of it
    });
    spawned.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    const ready = await waitFor(
      () => stdout.includes('"msg":"API listening"') || child.exitCode !== null || child.signalCode !== null,
      40_000,
      100,
    );
    if (!ready || child.exitCode !== null)
      throw new Error(`the API did not start (exit ${child.exitCode}):\n${stderr.slice(-3000)}`);
    return { child, port, stdout: () => stdout, stderr: () => stderr, exited };
  };

  /** One GET on a new connection (no keep-alive), so the cluster hands each request to a process anew. */
  const probe = (primary: Primary, id: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port: primary.port, path: PROBE, agent: false, headers: { 'X-Request-Id': id } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
    });

  const accessLines = (primary: Primary): AccessLine[] =>
    primary
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"msg":"request completed"'))
      .map((line) => JSON.parse(line) as AccessLine);

  /** The pid that answered each request id, once its access line is written. */
  const answeredBy = async (primary: Primary, ids: string[]): Promise<number[]> => {
    const byId = () => new Map(accessLines(primary).map((line) => [line.req.id, line.pid]));
    await waitFor(() => ids.every((id) => byId().has(id)), 5_000, 50);
    return ids.map((id) => byId().get(id) ?? -1);
  };

  const apiProcesses = (primary: Primary) => childrenOf(primary.child.pid ?? -1, MAIN_JS);

  const expectNothingLeft = async (primary: Primary) => {
    const cluster = path.join(dataDir, 'postgres');
    const gone = await waitFor(
      () => [...seenPids].every((pid) => !isProcessRunning(pid)) && postmastersOf(cluster).length === 0,
      10_000,
    );
    expect({
      apiProcesses: [...seenPids].filter(isProcessRunning),
      postmasters: postmastersOf(cluster),
    }).toEqual({ apiProcesses: [], postmasters: [] });
    expect(gone).toBe(true);
    expect(primary.stderr()).toBe('');
  };

  beforeAll(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-api-cluster-'));
    chmodSync(dataDir, 0o755); // the server runs as the postgres user when we are root
  });

  afterAll(async () => {
    for (const child of spawned)
      if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid ?? 0), 'SIGKILL');
    for (const pid of seenPids) if (isProcessRunning(pid)) process.kill(pid, 'SIGKILL');
    const cluster = path.join(dataDir, 'postgres');
    for (const pid of postmastersOf(cluster)) process.kill(pid, 'SIGQUIT');
    await waitFor(() => postmastersOf(cluster).length === 0, 5_000);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('spreads connections, replaces a killed process without a failed request, exits 0 on SIGTERM', async () => {
    const primary = await start();
    const first = apiProcesses(primary);
    expect(first).toHaveLength(PROCESSES);
    first.forEach((pid) => seenPids.add(pid));

    // Connections spread: 30 requests at once on new connections are answered by more than one process.
    const ids = Array.from({ length: 30 }, (_, i) => `spread-${i}-${primary.port}`);
    expect(await Promise.all(ids.map((id) => probe(primary, id)))).toEqual(ids.map(() => 404));
    const pids = new Set(await answeredBy(primary, ids));
    expect(pids.size).toBeGreaterThan(1);
    for (const pid of pids) expect(first).toContain(pid);

    // SIGKILL one: the primary notices, the two others keep answering, a new process takes the place.
    const [victim] = [...pids];
    process.kill(victim, 'SIGKILL');
    expect(
      await waitFor(() => primary.stdout().includes('API process exited: starting another'), 5_000),
    ).toBe(true);
    const during = Array.from({ length: 10 }, (_, i) => `during-${i}-${primary.port}`);
    for (const id of during) expect(await probe(primary, id)).toBe(404);

    const replaced = await waitFor(() => {
      const now = apiProcesses(primary);
      return now.length === PROCESSES && !now.includes(victim);
    }, 15_000);
    expect(replaced).toBe(true);
    const [replacement] = apiProcesses(primary).filter((pid) => !first.includes(pid));
    seenPids.add(replacement);
    // Requests keep succeeding until the replacement answers some of them (it listens once Nest started).
    let round = 0;
    const servedByReplacement = await waitFor(async () => {
      const batch = Array.from({ length: 6 }, (_, i) => `after-${round}-${i}-${primary.port}`);
      round += 1;
      const statuses = await Promise.all(batch.map((id) => probe(primary, id)));
      expect(statuses).toEqual(batch.map(() => 404));
      return (await answeredBy(primary, batch)).includes(replacement);
    }, 20_000);
    expect(servedByReplacement).toBe(true);

    // SIGTERM to the primary alone (a supervisor's stop): every API process closes, then the database.
    primary.child.kill('SIGTERM');
    expect(await primary.exited).toEqual({ code: 0, signal: null });
    await expectNothingLeft(primary);
  }, 60_000);

  /** A connection kept open by one answered request (keep-alive), or closed by the server before any answer. */
  const holdConnection = (primary: Primary): Promise<{ socket: net.Socket; answered: boolean }> =>
    new Promise((resolve, reject) => {
      const socket = net.connect(primary.port, '127.0.0.1');
      let data = '';
      socket.setEncoding('utf8');
      socket.on('connect', () => socket.write(`GET ${PROBE} HTTP/1.1\r\nHost: localhost\r\n\r\n`));
      socket.on('data', (chunk: string) => {
        data += chunk;
        if (data.includes('\r\n\r\n')) resolve({ socket, answered: true });
      });
      socket.on('close', () => resolve({ socket, answered: false }));
      socket.on('error', (error: NodeJS.ErrnoException) =>
        error.code === 'ECONNRESET' ? resolve({ socket, answered: false }) : reject(error),
      );
    });

  it('MAX_CONNECTIONS per API process: a connection past the cap of every process is closed by the process that gets it, counted and logged', async () => {
    // Node's server.maxConnections under node:cluster handed such a connection back to the primary, which handed it
    // to the next full process, without end: never closed nor served, about a core spent by each process on it.
    const primary = await start({ MAX_CONNECTIONS: '1' });
    apiProcesses(primary).forEach((pid) => seenPids.add(pid));
    const held = [];
    for (let i = 0; i < PROCESSES; i++) held.push(await holdConnection(primary));
    expect(held.map(({ answered }) => answered)).toEqual(held.map(() => true));
    // Closed unanswered; before, still open (neither closed nor answered) when the bound ran out.
    const closedOrOpen = (connection: Promise<{ socket: net.Socket; answered: boolean }>) =>
      Promise.race([
        connection.then(({ answered }) => (answered ? 'answered' : 'closed')),
        new Promise<string>((resolve) => setTimeout(() => resolve('still open'), 15_000).unref()),
      ]);
    const extra = [holdConnection(primary), holdConnection(primary)];
    expect(await Promise.all(extra.map(closedOrOpen))).toEqual(['closed', 'closed']);
    expect(
      await waitFor(
        () => primary.stdout().includes('connection dropped: MAX_CONNECTIONS connections are open'),
        5_000,
      ),
    ).toBe(true);
    // Once a place frees, a new connection is served again.
    held[0].socket.destroy();
    let served = false;
    for (let tries = 0; !served && tries < 50; tries++) {
      const next = await holdConnection(primary);
      served = next.answered;
      next.socket.destroy();
    }
    expect(served).toBe(true);
    for (const { socket } of held) socket.destroy();
    primary.child.kill('SIGTERM');
    expect(await primary.exited).toEqual({ code: 0, signal: null });
    await expectNothingLeft(primary);
  }, 60_000);

  it('exits 0 when Ctrl-C reaches the whole process group (SIGINT to the primary, its API processes and PostgreSQL)', async () => {
    const primary = await start(); // the same data directory: no initdb, no migration this time
    apiProcesses(primary).forEach((pid) => seenPids.add(pid));
    expect(await probe(primary, `sigint-${primary.port}`)).toBe(404);

    process.kill(-(primary.child.pid ?? 0), 'SIGINT');
    expect(await primary.exited).toEqual({ code: 0, signal: null });
    await expectNothingLeft(primary);
  }, 40_000);
});
