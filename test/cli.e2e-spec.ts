import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import pg from 'pg';
import { createTestDatabase } from './support/database.js';
import { runCli, type ProcessResult } from './support/processes.js';
import { freshKeyPair } from './support/keys.js';

/**
 * The admin CLI as operators run it: the compiled entry point in its own
 * process, against a real (migrated) database, JSON on stdout.
 */
describe('admin CLI (node dist/src/cli.js)', () => {
  let database: { url: string; drop: () => Promise<void> };
  let dataDir: string;
  let keyDir: string;
  let db: pg.Client;
  /** Every stdout line of every successful run, to check that none is a log line. */
  const stdoutLines: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-cli-data-'));
    keyDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-cli-keys-'));
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(keyDir, { recursive: true, force: true });
  });

  const cli = (args: string[], logLevel = 'silent'): Promise<ProcessResult> =>
    runCli({ databaseUrl: database.url, dataDir }, args, { LOG_LEVEL: logLevel });

  /** Runs a command that must succeed and print exactly one JSON document on one line. */
  const cliJson = async <T>(args: string[], logLevel = 'silent'): Promise<T> => {
    const result = await cli(args, logLevel);
    if (result.code !== 0) throw new Error(`cli ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
    const lines = result.stdout.split('\n').filter((line) => line !== '');
    stdoutLines.push(...lines);
    expect(result.stdout.endsWith('\n')).toBe(true);
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]) as T;
  };

  const keysFile = () => path.join(dataDir, 'keys', 'signing-keys.json');

  let fileCounter = 0;
  const writeKeyFile = (content: string, extension = 'pem'): string => {
    const file = path.join(keyDir, `key-${++fileCounter}.${extension}`);
    writeFileSync(file, content);
    return file;
  };

  const p256 = () => freshKeyPair('P-256');
  const publicPem = (key: ReturnType<typeof p256>) => key.publicPem;
  const publicJwk = (key: ReturnType<typeof p256>) => key.publicKey.export({ format: 'jwk' }) as JWK;
  const thumbprint = (jwk: JWK) =>
    calculateJwkThumbprint({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, 'sha256');

  interface Created {
    appId: string;
    clientId: string;
    keyId: string;
  }
  interface Listed {
    appId: string;
    name: string;
    status: string;
    webhookUrl: string | null;
    keys: { keyId: string; status: string; revokedAt: string | null }[];
  }

  const listApps = () => cliJson<Listed[]>(['apps', 'list']);
  const listed = async (appId: string): Promise<Listed> => {
    const app = (await listApps()).find((candidate) => candidate.appId === appId);
    if (!app) throw new Error(`application ${appId} is not listed`);
    return app;
  };

  describe('commands that succeed', () => {
    let pemApp: Created;
    let pemKey: ReturnType<typeof p256>;

    it('apps create with a PEM (SPKI) key prints {appId, clientId, keyId} with the RFC 7638 thumbprint', async () => {
      pemKey = p256();
      const before = await db.query<{ n: string }>('SELECT count(*) AS n FROM applications');
      pemApp = await cliJson<Created>([
        'apps',
        'create',
        '--name',
        'PEM app',
        '--public-key',
        writeKeyFile(publicPem(pemKey)),
      ]);
      expect(Object.keys(pemApp).sort()).toEqual(['appId', 'clientId', 'keyId']);
      expect(pemApp.appId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(pemApp.clientId).toBe(pemApp.appId);
      expect(pemApp.keyId).toBe(await thumbprint(publicJwk(pemKey)));
      const after = await db.query<{ n: string }>('SELECT count(*) AS n FROM applications');
      expect(Number(after.rows[0].n)).toBe(Number(before.rows[0].n) + 1);
      const stored = await db.query('SELECT key_id, status FROM application_keys WHERE app_id = $1', [
        pemApp.appId,
      ]);
      expect(stored.rows).toEqual([{ key_id: pemApp.keyId, status: 'active' }]);
    });

    it('apps create with a JWK file and a webhook URL', async () => {
      const key = p256();
      const jwk = publicJwk(key);
      const created = await cliJson<Created>([
        'apps',
        'create',
        '--name',
        'JWK app',
        '--public-key',
        writeKeyFile(JSON.stringify(jwk), 'json'),
        '--webhook-url',
        'https://example.com/created',
      ]);
      expect(created.clientId).toBe(created.appId);
      expect(created.keyId).toBe(await thumbprint(jwk));
      expect(created.appId).not.toBe(pemApp.appId);
      const row = await db.query('SELECT name, webhook_url FROM applications WHERE id = $1', [created.appId]);
      expect(row.rows).toEqual([{ name: 'JWK app', webhook_url: 'https://example.com/created' }]);
    });

    it('apps list shows the application with its key', async () => {
      const app = await listed(pemApp.appId);
      expect(app).toMatchObject({ appId: pemApp.appId, name: 'PEM app', status: 'active', webhookUrl: null });
      expect(app.keys).toEqual([
        expect.objectContaining({ keyId: pemApp.keyId, status: 'active', revokedAt: null }),
      ]);
    });

    it('apps set-webhook stores the URL and prints it', async () => {
      const result = await cliJson<{ appId: string; webhookUrl: string }>([
        'apps',
        'set-webhook',
        '--app-id',
        pemApp.appId,
        '--url',
        'https://example.com/hook',
      ]);
      expect(result).toEqual({ appId: pemApp.appId, webhookUrl: 'https://example.com/hook' });
      const row = await db.query('SELECT webhook_url FROM applications WHERE id = $1', [pemApp.appId]);
      expect(row.rows).toEqual([{ webhook_url: 'https://example.com/hook' }]);
    });

    it('apps set-webhook with the stored URL records unchanged, not a second change', async () => {
      const args = ['apps', 'set-webhook', '--app-id', pemApp.appId, '--url', 'https://example.com/hook'];
      expect(await cliJson(args)).toEqual({ appId: pemApp.appId, webhookUrl: 'https://example.com/hook' });
      const outcomes = await db.query(
        `SELECT outcome FROM audit_records WHERE resource_type = 'application' AND resource_id = $1 ORDER BY id`,
        [pemApp.appId],
      );
      expect(outcomes.rows.map((row: { outcome: string }) => row.outcome)).toEqual([
        'created',
        'webhook set',
        'unchanged',
      ]);
    });

    let secondKeyId: string;

    it('apps add-key registers another key', async () => {
      const key = p256();
      const result = await cliJson<{ appId: string; keyId: string }>([
        'apps',
        'add-key',
        '--app-id',
        pemApp.appId,
        '--public-key',
        writeKeyFile(publicPem(key)),
      ]);
      secondKeyId = await thumbprint(publicJwk(key));
      expect(result).toEqual({ appId: pemApp.appId, keyId: secondKeyId });
      const keys = await db.query(
        'SELECT key_id, status FROM application_keys WHERE app_id = $1 ORDER BY created_at, key_id',
        [pemApp.appId],
      );
      expect(keys.rows).toEqual([
        { key_id: pemApp.keyId, status: 'active' },
        { key_id: secondKeyId, status: 'active' },
      ]);
    });

    it('apps revoke-key revokes that key only', async () => {
      const result = await cliJson<{ appId: string; keyId: string; status: string }>([
        'apps',
        'revoke-key',
        '--app-id',
        pemApp.appId,
        '--key-id',
        secondKeyId,
      ]);
      expect(result).toEqual({ appId: pemApp.appId, keyId: secondKeyId, status: 'revoked' });
      const keys = (await listed(pemApp.appId)).keys;
      expect(keys.find((key) => key.keyId === secondKeyId)).toMatchObject({
        status: 'revoked',
        revokedAt: expect.any(String),
      });
      expect(keys.find((key) => key.keyId === pemApp.keyId)).toMatchObject({
        status: 'active',
        revokedAt: null,
      });
    });

    it('keys rotate adds a signing key, published at once, that signs SIGNING_KEY_ACTIVATION_SECONDS (120) later', async () => {
      // The earlier commands generated the development signing key under DATA_DIR/keys.
      const stored = JSON.parse(readFileSync(keysFile(), 'utf8')) as { keys: { kid: string }[] };
      expect(stored.keys).toHaveLength(1);
      const firstKid = stored.keys[0].kid;
      const before = Date.now();
      const rotated = await cliJson<{ kid: string; signsFrom: string; published: string[] }>([
        'keys',
        'rotate',
      ]);
      expect(Object.keys(rotated).sort()).toEqual(['kid', 'published', 'signsFrom']);
      expect(rotated.kid).not.toBe(firstKid);
      expect(rotated.published).toEqual([firstKid, rotated.kid]);
      expect(Date.parse(rotated.signsFrom) - before).toBeGreaterThanOrEqual(120_000);
      expect(Date.parse(rotated.signsFrom) - Date.now()).toBeLessThanOrEqual(120_000);
      const after = await cliJson<{ kid: string; current: boolean }[]>(['keys', 'list']);
      expect(after).toEqual([
        { kid: firstKid, current: true },
        { kid: rotated.kid, current: false },
      ]);
    });

    it('writes logs to stderr only: stdout stays one JSON line even at LOG_LEVEL=debug', async () => {
      const result = await cli(['apps', 'list'], 'debug');
      expect(result.code).toBe(0);
      const lines = result.stdout.split('\n').filter((line) => line !== '');
      expect(lines).toHaveLength(1);
      expect(Array.isArray(JSON.parse(lines[0]))).toBe(true);
      // Every stdout line of every successful command so far is a JSON document, not a log record.
      expect(stdoutLines.length).toBeGreaterThanOrEqual(8);
      for (const line of stdoutLines) {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        expect(parsed).not.toHaveProperty('level');
        expect(parsed).not.toHaveProperty('msg');
      }
    });
  });

  it('stops with the configuration exit (78) when PostgreSQL reads OPERATIONS_TIME_ZONE otherwise than the runtime (decision 0098)', async () => {
    // An old alias the runtime's ICU still takes and PostgreSQL's zone files no longer have.
    const result = await runCli({ databaseUrl: database.url, dataDir }, ['keys', 'list'], {
      OPERATIONS_TIME_ZONE: 'Canada/East-Saskatchewan',
    });
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 78, stdout: '' });
    expect(result.stderr).toMatch(
      /OPERATIONS_TIME_ZONE "Canada\/East-Saskatchewan": PostgreSQL does not know it/,
    );
  });

  describe('bad input: non-zero exit, the problem on stderr, empty stdout, nothing changed', () => {
    let app: Created;
    let keysFileBefore: string;
    let before: string;
    let countsBefore: number[];
    const results = new Map<string, ProcessResult>();
    const expectations = new Map<string, RegExp>();

    /** Everything a command could change: both tables in full, as text. */
    const snapshot = async (): Promise<string> => {
      const apps = await db.query(
        'SELECT id, name, status, webhook_url, updated_at FROM applications ORDER BY id',
      );
      const keys = await db.query(
        'SELECT app_id, key_id, public_jwk, status, revoked_at FROM application_keys ORDER BY app_id, key_id',
      );
      return JSON.stringify({ apps: apps.rows, keys: keys.rows });
    };
    const count = async (table: 'applications' | 'application_keys') =>
      Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);

    const goodKeyFile = () => writeKeyFile(publicPem(p256()));
    const rsaPublic = () => freshKeyPair('rsa-2048').publicPem;
    const p384Public = () => freshKeyPair('P-384').publicPem;

    // name → [arguments, what stderr must say]
    const cases: Record<string, () => [string[], RegExp]> = {
      'missing --name': () => [['apps', 'create', '--public-key', goodKeyFile()], /--name/],
      'missing --public-key': () => [['apps', 'create', '--name', 'no key'], /--public-key/],
      'unreadable key file': () => [
        ['apps', 'create', '--name', 'x', '--public-key', path.join(keyDir, 'does-not-exist.pem')],
        /cannot read public key file .*does-not-exist\.pem/,
      ],
      'a private key (PEM)': () => [
        [
          'apps',
          'create',
          '--name',
          'x',
          '--public-key',
          writeKeyFile(p256().privateKey.export({ type: 'pkcs8', format: 'pem' }) as string),
        ],
        /private key/,
      ],
      'a private key (JWK)': () => [
        [
          'apps',
          'create',
          '--name',
          'x',
          '--public-key',
          writeKeyFile(JSON.stringify(p256().privateKey.export({ format: 'jwk' })), 'json'),
        ],
        /private key/,
      ],
      'an RSA key': () => [
        ['apps', 'create', '--name', 'x', '--public-key', writeKeyFile(rsaPublic())],
        /P-256/,
      ],
      'a P-384 key': () => [
        ['apps', 'create', '--name', 'x', '--public-key', writeKeyFile(p384Public())],
        /P-256/,
      ],
      'a garbage key file': () => [
        ['apps', 'create', '--name', 'x', '--public-key', writeKeyFile('this is not a key\n')],
        /not a PEM \(SPKI\) or JWK public key/,
      ],
      'an ftp:// webhook URL at create': () => [
        [
          'apps',
          'create',
          '--name',
          'x',
          '--public-key',
          goodKeyFile(),
          '--webhook-url',
          'ftp://example.com/h',
        ],
        /http or https/,
      ],
      'add-key with an unknown --app-id': () => {
        const id = randomUUID();
        return [
          ['apps', 'add-key', '--app-id', id, '--public-key', goodKeyFile()],
          new RegExp(`Application not found: ${id}`),
        ];
      },
      'add-key with a non-uuid --app-id': () => [
        ['apps', 'add-key', '--app-id', 'not-a-uuid', '--public-key', goodKeyFile()],
        /Application not found: not-a-uuid/,
      ],
      'add-key of a key already registered': () => [
        ['apps', 'add-key', '--app-id', app.appId, '--public-key', path.join(keyDir, 'bad-input-app.pem')],
        /already registered/,
      ],
      'set-webhook with an unknown --app-id': () => {
        const id = randomUUID();
        return [
          ['apps', 'set-webhook', '--app-id', id, '--url', 'https://example.com/hook'],
          new RegExp(`Application not found: ${id}`),
        ];
      },
      'set-webhook with an ftp:// URL': () => [
        ['apps', 'set-webhook', '--app-id', app.appId, '--url', 'ftp://example.com/hook'],
        /webhookUrl: .*http or https/,
      ],
      'set-webhook with a URL carrying credentials': () => [
        ['apps', 'set-webhook', '--app-id', app.appId, '--url', 'https://user:secret@example.com/hook'],
        /credentials/,
      ],
      'revoke-key of an unknown key id': () => [
        ['apps', 'revoke-key', '--app-id', app.appId, '--key-id', 'unknown-key-id'],
        /No active key with that keyId.*unknown-key-id/,
      ],
      'webhooks list with a --limit that is not a whole number from 1 to 1000': () => [
        ['webhooks', 'list', '--limit', 'abc'],
        /--limit must be a whole number from 1 to 1000/,
      ],
      'webhooks list with --limit 1.5': () => [
        ['webhooks', 'list', '--limit', '1.5'],
        /--limit must be a whole number from 1 to 1000/,
      ],
      'webhooks list with --limit 5000': () => [
        ['webhooks', 'list', '--limit', '5000'],
        /--limit must be a whole number from 1 to 1000/,
      ],
      'disable with an unknown application id': () => {
        const id = randomUUID();
        return [['apps', 'disable', '--app-id', id], new RegExp(`Application not found: ${id}`)];
      },
      'enable with a non-uuid application id': () => [
        ['apps', 'enable', '--app-id', 'not-a-uuid'],
        /Application not found: not-a-uuid/,
      ],
      'disable without an application id': () => [['apps', 'disable'], /missing required option --app-id/],
      'create with a name of two words, unquoted (the second is refused, not dropped)': () => [
        ['apps', 'create', '--name', 'My', 'wallet', '--public-key', goodKeyFile()],
        /unexpected argument 'wallet': apps create takes no arguments/,
      ],
      'an unknown apps subcommand': () => [['apps', 'frobnicate'], /unknown command: frobnicate/],
      'an unknown top-level command': () => [['frobnicate'], /unknown command 'frobnicate'/],
      "create with set-webhook's --url (each subcommand takes only its own options)": () => [
        ['apps', 'create', '--name', 'x', '--public-key', goodKeyFile(), '--url', 'https://example.com/hook'],
        /unknown option '--url'/,
      ],
      'set-webhook with --name': () => [
        ['apps', 'set-webhook', '--app-id', app.appId, '--url', 'https://example.com/hook', '--name', 'x'],
        /unknown option '--name'/,
      ],
      'an unknown option': () => [
        ['apps', 'create', '--name', 'x', '--public-key', goodKeyFile(), '--colour', 'red'],
        /unknown option '--colour'/,
      ],
    };

    beforeAll(async () => {
      writeFileSync(path.join(keyDir, 'bad-input-app.pem'), publicPem(p256()));
      app = await cliJson<Created>([
        'apps',
        'create',
        '--name',
        'bad input target',
        '--public-key',
        path.join(keyDir, 'bad-input-app.pem'),
      ]);
      keysFileBefore = readFileSync(keysFile(), 'utf8');
      before = await snapshot();
      countsBefore = [await count('applications'), await count('application_keys')];
      // Each case is a whole node process: run them four at a time to keep the file quick. Running them
      // together is sound for the "nothing changed" check: none may change anything.
      const pending = Object.entries(cases).map(([name, build]) => [name, build()] as const);
      const worker = async () => {
        for (let next = pending.shift(); next; next = pending.shift()) {
          const [name, [args, problem]] = next;
          expectations.set(name, problem);
          results.set(name, await cli(args));
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
    }, 120_000);

    it.each(Object.keys(cases))('%s', (name) => {
      const result = results.get(name);
      expect(result).toBeDefined();
      expect(result?.signal).toBeNull();
      expect(result?.code).not.toBe(0);
      expect(result?.code).not.toBeNull();
      expect(result?.stdout).toBe('');
      expect(result?.stderr).toMatch(expectations.get(name) as RegExp);
    });

    it('changed nothing: both tables and the signing keys are as before', async () => {
      expect(results.size).toBe(Object.keys(cases).length);
      expect(await snapshot()).toBe(before);
      expect([await count('applications'), await count('application_keys')]).toEqual(countsBefore);
      expect(readFileSync(keysFile(), 'utf8')).toBe(keysFileBefore);
    });
  });

  /**
   * Every command the CLI registers, found by walking its help (so a command added later is walked too), given
   * the arguments it declares and one more: refused before it runs (decision 0092), exit 1, the argument named on
   * stderr, nothing written anywhere. A group (`apps`) refuses it as an unknown subcommand and prints its help,
   * which names its commands: the walk goes on from there.
   */
  describe('every command refuses an argument it does not take', () => {
    interface Walked {
      path: string[];
      /** The arguments its help term declares (`<uuid>`), in order. */
      declared: string[];
      group: boolean;
      result: ProcessResult;
    }
    const walked: Walked[] = [];
    let before: string;
    let keysBefore: string;

    /** Every table of the database, each as a digest of all its rows. */
    const everyTable = async (): Promise<string> => {
      const tables = await db.query<{ name: string }>(
        `SELECT quote_ident(table_name) AS name FROM information_schema.tables
          WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
      );
      const digests: string[] = [];
      for (const { name } of tables.rows) {
        const digest = await db.query<{ md5: string; n: string }>(
          `SELECT md5(coalesce(string_agg(t::text, E'\n' ORDER BY t::text), '')) AS md5, count(*) AS n FROM ${name} t`,
        );
        digests.push(`${name} ${digest.rows[0].n} ${digest.rows[0].md5}`);
      }
      return digests.join('\n');
    };

    /** The commands a help text lists ("Commands:"), as [name, declared arguments]; `help` left out. */
    const commandsOf = (help: string): [string, string[]][] =>
      (help.split(/^Commands:$/m)[1] ?? '')
        .split('\n')
        .filter((line) => /^ {2}\S/.test(line))
        .map((line) =>
          line
            .trim()
            .split(/\s{2,}/)[0]
            .split(' '),
        )
        .filter(([name]) => name !== 'help')
        .map(([name, ...rest]) => [name, rest.filter((word) => /^[<[]/.test(word) && word !== '[options]')]);

    beforeAll(async () => {
      const root = await cli(['--help']);
      expect(root.code).toBe(0);
      before = await everyTable();
      keysBefore = readFileSync(keysFile(), 'utf8');
      let level = commandsOf(root.stdout).map(([name, declared]) => ({ path: [name], declared }));
      while (level.length > 0) {
        const pending = [...level];
        const next: typeof level = [];
        // Each is a whole node process: four at a time.
        const worker = async () => {
          for (let item = pending.shift(); item; item = pending.shift()) {
            // A well-formed value for each declared argument (all of them are ids today), then one too many.
            const args = [...item.path, ...item.declared.map(() => randomUUID()), 'surplus-argument'];
            const result = await cli(args);
            const children = commandsOf(result.stderr);
            walked.push({ ...item, group: children.length > 0, result });
            next.push(...children.map(([name, declared]) => ({ path: [...item.path, name], declared })));
          }
        };
        await Promise.all([worker(), worker(), worker(), worker()]);
        level = next;
      }
    }, 240_000);

    it('finds every command, those of each group, through the help', () => {
      const leaves = walked.filter((command) => !command.group).map((command) => command.path.join(' '));
      for (const known of [
        'apps create',
        'apps list',
        'apps disable',
        'apps enable',
        'audit list',
        'keys rotate',
        'webhooks replay',
        'ledger verify',
        'transfers return',
        'transfers pay-out',
        'documents reap',
      ])
        expect(leaves).toContain(known);
      expect(walked.find((command) => command.path.join(' ') === 'transfers return')?.declared).toEqual([
        '<uuid>',
      ]);
      expect(
        walked
          .filter((command) => command.group)
          .map((command) => command.path.join(' '))
          .sort(),
      ).toEqual(['apps', 'audit', 'documents', 'keys', 'ledger', 'transfers', 'webhooks']);
    });

    it('refuses the surplus argument of each: exit 1, empty stdout, the argument named on stderr', () => {
      for (const { path: words, group, result } of walked) {
        const command = words.join(' ');
        expect({ command, code: result.code, stdout: result.stdout }).toEqual({
          command,
          code: 1,
          stdout: '',
        });
        expect({ command, stderr: result.stderr }).toEqual({
          command,
          stderr: expect.stringContaining(
            group
              ? 'error: unknown command: surplus-argument'
              : `error: unexpected argument 'surplus-argument': ${command} takes `,
          ),
        });
      }
    });

    it('wrote nothing: every table and the signing keys are as before', async () => {
      expect(await everyTable()).toBe(before);
      expect(readFileSync(keysFile(), 'utf8')).toBe(keysBefore);
    });
  });
});
