import { spawn } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { MIGRATIONS } from '../migrations/index.js';
import { createEmptyDatabase } from './support/database.js';
import {
  childEnv,
  freePort,
  MAIN_JS,
  ROOT,
  runNode,
  waitFor,
  WORKER_JS,
  type ProcessResult,
} from './support/processes.js';

const MIGRATE_JS = path.join(ROOT, 'dist/src/migrate.js');

/**
 * With DATABASE_URL (production), only `npm run migration:run` migrates; the API and the worker refuse a schema
 * that is behind, and a database they cannot reach, with one log line each. Real processes on a real, empty
 * database of the test server.
 */
describe('npm run migration:run and a schema that is behind (DATABASE_URL set)', () => {
  let database: { url: string; drop: () => Promise<void> };

  beforeAll(async () => {
    database = await createEmptyDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  const env = (url: string, port?: number) =>
    childEnv({ DATABASE_URL: url, LOG_LEVEL: 'info', ...(port ? { PORT: String(port) } : {}) });

  /** The JSON log lines a process wrote (stdout and stderr). */
  const logLines = (result: ProcessResult) =>
    `${result.stdout}\n${result.stderr}`
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string; migrations?: string[] });

  const appliedMigrations = async (): Promise<string[]> => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const exists = await client.query(`SELECT to_regclass('public.schema_migrations') AS name`);
      if ((exists.rows[0] as { name: string | null }).name === null) return [];
      const rows = await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY id');
      return rows.rows.map((row) => row.name);
    } finally {
      await client.end();
    }
  };

  it('the API and the worker refuse an unmigrated database with one line that says what to run, and change nothing', async () => {
    for (const script of [MAIN_JS, WORKER_JS]) {
      const result = await runNode(script, [], env(database.url, await freePort()));
      expect(result.code).toBe(1);
      const fatal = logLines(result).filter((line) => line.level === 60);
      expect(fatal.map((line) => line.msg)).toEqual([
        'cannot start: the database schema is behind: run `npm run migration:run` first',
      ]);
      expect(result.stderr).not.toContain('triggerUncaughtException');
    }
    expect(await appliedMigrations()).toEqual([]);
  }, 60_000);

  it('migration:run applies every migration once, then finds nothing to do', async () => {
    const first = await runNode(MIGRATE_JS, [], env(database.url), 120_000);
    expect(first.code).toBe(0);
    const applied = logLines(first).find((line) => line.msg === 'migrations applied');
    expect(applied?.migrations).toEqual(MIGRATIONS.map((migration) => migration.name));
    expect(logLines(first).map((line) => line.msg)).toContain('schema is up to date');
    expect(await appliedMigrations()).toEqual(MIGRATIONS.map((migration) => migration.name));

    const again = await runNode(MIGRATE_JS, [], env(database.url));
    expect(again.code).toBe(0);
    expect(logLines(again).map((line) => line.msg)).not.toContain('migrations applied');
    expect(logLines(again).map((line) => line.msg)).toContain('schema is up to date');
  }, 150_000);

  it('then the API starts on it and stops on SIGTERM', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [MAIN_JS], {
      cwd: ROOT,
      env: env(database.url, port),
      stdio: 'pipe',
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const ready = await waitFor(
        async () =>
          (await fetch(`http://127.0.0.1:${port}/v1/health/ready`).catch(() => undefined))?.status === 200,
        45_000,
        200,
      );
      expect({ ready, output: ready ? '' : output.slice(-2000) }).toEqual({ ready: true, output: '' });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(output).not.toMatch(/"level":[56]0/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 60_000);

  it('the API and the worker do not start without their signing keys file (the worker used up webhook attempts unsent), in JSON lines only', async () => {
    for (const [script, what] of [
      [MAIN_JS, 'API'],
      [WORKER_JS, 'worker'],
    ] as const) {
      const result = await runNode(script, [], {
        ...env(database.url, await freePort()),
        SIGNING_KEYS_FILE: path.join(ROOT, 'no-such-dir', 'signing-keys.json'),
      });
      expect({ what, code: result.code }).toEqual({ what, code: 1 });
      // Nest's start-up lines are not printed in its own text format when the start fails: every line is JSON.
      const notJson = result.stdout.split('\n').filter((line) => line !== '' && !line.startsWith('{'));
      expect({ what, notJson }).toEqual({ what, notJson: [] });
      const fatal = logLines(result).filter((line) => line.level === 60) as unknown as {
        msg: string;
        err?: { message?: string };
      }[];
      expect(fatal).toEqual([
        expect.objectContaining({
          msg: `${what} failed to start`,
          err: expect.objectContaining({
            message: expect.stringMatching(
              /^SIGNING_KEYS_FILE \S*no-such-dir\/signing-keys\.json does not exist/,
            ),
          }),
        }),
      ]);
    }
  }, 60_000);

  it('a database it cannot reach, or that refuses its password: one line naming the server, never the password', async () => {
    const unreachable = new URL(database.url);
    unreachable.port = String(await freePort()); // nothing listens there
    unreachable.password = 'not-the-password-1234';
    const wrongPassword = new URL(database.url);
    wrongPassword.password = 'not-the-password-1234';
    for (const [url, reason] of [
      [unreachable, /^cannot start: connect ECONNREFUSED 127\.0\.0\.1:\d+$/],
      [wrongPassword, /^cannot start: password authentication failed for user "postgres"$/],
    ] as const) {
      const result = await runNode(MAIN_JS, [], env(url.toString(), await freePort()));
      expect(result.code).toBe(1);
      const fatal = logLines(result).filter((line) => line.level === 60);
      expect(fatal).toEqual([
        expect.objectContaining({
          msg: expect.stringMatching(reason),
          database: `${url.hostname}:${url.port}`,
        }),
      ]);
      expect(`${result.stdout}${result.stderr}`).not.toContain('not-the-password-1234');
    }
    const migrate = await runNode(MIGRATE_JS, [], env(unreachable.toString()));
    expect(migrate.code).toBe(1);
    expect(logLines(migrate).filter((line) => line.level === 60)).toEqual([
      expect.objectContaining({ msg: expect.stringMatching(/^migrations failed: connect ECONNREFUSED /) }),
    ]);
    expect(`${migrate.stdout}${migrate.stderr}`).not.toContain('not-the-password-1234');
  }, 60_000);
});
