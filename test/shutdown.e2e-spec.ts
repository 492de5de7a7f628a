import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startProcess, waitForOutput, type Running } from './support/bank.js';
import { createTestDatabase } from './support/database.js';
import { childEnv, freePort, MAIN_JS, waitFor } from './support/processes.js';
import { TEST_BASE_URL } from './support/test-app.js';

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

/** The API as deployed (`node dist/src/main.js`, DATABASE_URL), with when and how it exited. */
function startApi(env: Record<string, string>): { running: Running; exited: Promise<Exit> } {
  const running = startProcess(process.execPath, [MAIN_JS], childEnv({ LOG_LEVEL: 'info', ...env }));
  const exited = new Promise<Exit>((resolve) =>
    running.child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  return { running, exited };
}

/** At most `ms` for `exited`: undefined when the process is still running then. */
const within = (exited: Promise<Exit>, ms: number): Promise<Exit | undefined> =>
  Promise.race([
    exited,
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref()),
  ]);

/** The JSON log lines with this message. */
const lines = (running: Running, msg: string): Record<string, unknown>[] =>
  running
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(`"msg":"${msg}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/**
 * Stopping the API for real (SIGTERM to `node dist/src/main.js`; decision 0102), each on a database of its own.
 */
describe('SIGTERM to the API', () => {
  let database: { url: string; drop: () => Promise<void> };
  let dataDir: string;
  const spawned: Running[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-shutdown-'));
  });

  afterAll(async () => {
    for (const running of spawned)
      if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  // API_PROCESSES=2: the primary passes the signal on to its API processes (node:cluster), each drains the same way.
  it.each(['1', '2'])(
    'with a request in flight on a keep-alive connection (API_PROCESSES=%s): answers it, closes the connection and exits 0 at once',
    async (processes) => {
      const port = await freePort();
      const api = startApi({
        DATABASE_URL: database.url,
        DATA_DIR: dataDir,
        PORT: String(port),
        PUBLIC_BASE_URL: TEST_BASE_URL,
        API_PROCESSES: processes,
      });
      spawned.push(api.running);
      await waitForOutput(api.running, '"msg":"API listening"', 45_000);

      // A raw HTTP/1.1 keep-alive request whose body is still on its way when the signal comes.
      const socket = net.connect(port, '127.0.0.1');
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      let received = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
      const socketClosed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
      const body = JSON.stringify({ firstName: 'Ada', lastName: 'Lovelace' });
      socket.write(
        'POST /v1/users HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n' +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      const signalledAt = Date.now();
      api.running.child.kill('SIGTERM');
      await waitForOutput(api.running, '"msg":"shutting down"', 5_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      socket.write(body.slice(10));

      const exit = await within(api.exited, 12_000);
      const closedAt = await within(
        socketClosed.then((at) => ({ code: 0, signal: null, at })),
        1_000,
      );
      socket.destroy();
      // Answered (no token: 401, after its body was read), told the connection closes, and closed by the server.
      expect(received).toMatch(/^HTTP\/1\.1 401 /);
      expect(received).toMatch(/\r\nConnection: close\r\n/i);
      expect(closedAt).toBeDefined();
      expect({ code: exit?.code, signal: exit?.signal }).toEqual({ code: 0, signal: null });
      // Well under the 25 s cut-off: measured 0.4 s after the signal (0.3 s of it the body's wait), 0.5 s with 2 processes.
      expect(exit!.at - signalledAt).toBeLessThan(10_000);
      expect(api.running.output()).not.toContain('shutdown timed out');
      // The process's own line (and with API_PROCESSES=2 each API process's).
      expect(lines(api.running, 'stopped')).toHaveLength(processes === '1' ? 1 : 3);
    },
    60_000,
  );

  it('during start-up: one line says it stopped on the signal and what it was doing, exit 143', async () => {
    // A database that accepts the connection and never answers: the start waits on the schema check.
    const held: net.Socket[] = [];
    const silent = net.createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as net.AddressInfo).port;
    try {
      const api = startApi({
        DATABASE_URL: `postgres://wallet:wallet@127.0.0.1:${silentPort}/wallet`,
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        PUBLIC_BASE_URL: TEST_BASE_URL,
      });
      spawned.push(api.running);
      expect(await waitFor(() => held.length > 0, 20_000, 20)).toBe(true);
      api.running.child.kill('SIGTERM');
      const exit = await within(api.exited, 5_000);
      expect({ code: exit?.code, signal: exit?.signal }).toEqual({ code: 143, signal: null });
      const stopped = lines(api.running, 'stopped during start-up');
      expect(stopped).toEqual([
        expect.objectContaining({ signal: 'SIGTERM', starting: 'checking the database schema' }),
      ]);
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
    }
  }, 60_000);
});
