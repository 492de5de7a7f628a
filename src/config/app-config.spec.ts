import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig, parseDuration } from './app-config.js';

/** Runs loadConfig and returns the ConfigError it throws (fails the test if it does not throw one). */
function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  describe('defaults (empty environment)', () => {
    const config = loadConfig({});

    it('listens on port 3000 under http://localhost:3000/v1/', () => {
      expect(config.port).toBe(3000);
      expect(config.publicBaseUrl).toBe('http://localhost:3000/v1/');
      expect(config.routePrefix).toBe('v1');
    });

    it('is a development configuration on the embedded database and the PostgreSQL queue backend', () => {
      expect(config.nodeEnv).toBe('development');
      expect(config.databaseUrl).toBeUndefined();
      expect(config.redisUrl).toBeUndefined();
      expect(config.databasePoolSize).toBe(10);
      expect(config.logLevel).toBe('info');
    });

    it('resolves DATA_DIR to an absolute path and keeps the signing keys under it', () => {
      expect(config.dataDir).toBe(path.resolve('./data'));
      expect(path.isAbsolute(config.dataDir)).toBe(true);
      expect(config.signingKeysFile).toBe(path.join(config.dataDir, 'keys', 'signing-keys.json'));
      expect(config.signingKeysFileExplicit).toBe(false);
    });

    it('parses the default webhook retry schedule to milliseconds', () => {
      expect(config.webhookRetryDelaysMs).toEqual([
        5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000,
      ]);
    });

    it('has the remaining documented defaults', () => {
      expect(config.clearingSimDelayMs).toBe(1000);
      expect(config.bodyLimitBytes).toBe(102_400);
      expect(config.accessTokenTtlSeconds).toBe(900);
      expect(config.clockSkewSeconds).toBe(60);
      expect(config.tokenRateLimitPerMinute).toBe(60);
      expect(config.webhookAllowPrivateUrls).toBe(false);
      expect(config.trustProxy).toBe(false);
      expect(config.metricsToken).toBeUndefined();
      expect(config.dbStatementTimeoutMs).toBe(15_000);
      expect(config.httpHeadersTimeoutMs).toBe(10_000);
      expect(config.httpRequestTimeoutMs).toBe(30_000);
      expect(config.apiHeapGrowthPercent).toBe(50);
      expect(config.eventsRetentionDays).toBe(30);
      expect(config.apiProcesses).toBe(1);
      expect(config.maxConnections).toBe(10_000);
      // SMPP 3.4: a receipt carries the submit_sm_resp message_id as it was (decision 0085).
      expect(config.mobile.smpp.receiptIdForm).toBe('same');
    });

    it('is silent by default under NODE_ENV=test', () => {
      expect(loadConfig({ NODE_ENV: 'test' }).logLevel).toBe('silent');
    });
  });

  describe('explicit settings', () => {
    it('reads MAX_CONNECTIONS (1-1000000) and refuses 0 and text', () => {
      expect(loadConfig({ MAX_CONNECTIONS: '2' }).maxConnections).toBe(2);
      expect(configError({ MAX_CONNECTIONS: '0' }).message).toContain('MAX_CONNECTIONS');
      expect(configError({ MAX_CONNECTIONS: 'all' }).message).toContain('MAX_CONNECTIONS');
    });

    it('reads API_PROCESSES (1-64) and refuses 0 and text', () => {
      expect(loadConfig({ API_PROCESSES: '3' }).apiProcesses).toBe(3);
      expect(configError({ API_PROCESSES: '0' }).message).toContain('API_PROCESSES');
      expect(configError({ API_PROCESSES: 'many' }).message).toContain('API_PROCESSES');
    });

    it('reads DATABASE_READ_URL beside DATABASE_URL and refuses it alone or with another scheme', () => {
      const config = loadConfig({
        DATABASE_URL: 'postgresql://u:p@db:5432/wallet',
        DATABASE_READ_URL: 'postgresql://u:p@replica:5432/wallet',
      });
      expect(config.databaseReadUrl).toBe('postgresql://u:p@replica:5432/wallet');
      expect(loadConfig({}).databaseReadUrl).toBeUndefined();
      expect(configError({ DATABASE_READ_URL: 'postgresql://u:p@replica:5432/wallet' }).message).toContain(
        'DATABASE_READ_URL needs DATABASE_URL',
      );
      expect(
        configError({ DATABASE_URL: 'postgresql://u:p@db/w', DATABASE_READ_URL: 'mysql://x' }).message,
      ).toContain('DATABASE_READ_URL');
    });

    it('derives the base URL from PORT when PUBLIC_BASE_URL is unset', () => {
      const config = loadConfig({ PORT: '8080' });
      expect(config.port).toBe(8080);
      expect(config.publicBaseUrl).toBe('http://localhost:8080/v1/');
    });

    it('takes the route prefix from the path of PUBLIC_BASE_URL', () => {
      const config = loadConfig({ PUBLIC_BASE_URL: 'https://pay.example.com/wallet/v1/' });
      expect(config.publicBaseUrl).toBe('https://pay.example.com/wallet/v1/');
      expect(config.routePrefix).toBe('wallet/v1');
    });

    it('reads URLs, sizes, durations and booleans', () => {
      const config = loadConfig({
        DATABASE_URL: 'postgresql://u:p@db:5432/wallet',
        REDIS_URL: 'rediss://cache:6380',
        DATA_DIR: '/var/lib/wallet',
        SIGNING_KEYS_FILE: '/etc/wallet/keys.json',
        WEBHOOK_RETRY_DELAYS: '250ms, 2s,1m',
        BODY_LIMIT: '2mb',
        WEBHOOK_ALLOW_PRIVATE_URLS: 'yes',
        TRUST_PROXY: '2',
        LOG_LEVEL: 'debug',
        NODE_ENV: 'production',
        API_HEAP_GROWTH_PERCENT: '0',
        EVENTS_RETENTION_DAYS: '90',
      });
      expect(config.databaseUrl).toBe('postgresql://u:p@db:5432/wallet');
      expect(config.redisUrl).toBe('rediss://cache:6380');
      expect(config.dataDir).toBe('/var/lib/wallet');
      expect(config.signingKeysFile).toBe('/etc/wallet/keys.json');
      expect(config.signingKeysFileExplicit).toBe(true);
      expect(config.webhookRetryDelaysMs).toEqual([250, 2000, 60_000]);
      expect(config.bodyLimitBytes).toBe(2 * 1024 * 1024);
      expect(config.webhookAllowPrivateUrls).toBe(true);
      expect(config.trustProxy).toBe(2);
      expect(config.logLevel).toBe('debug');
      expect(config.nodeEnv).toBe('production');
      expect(config.apiHeapGrowthPercent).toBe(0);
      expect(config.eventsRetentionDays).toBe(90);
    });

    it('reads TRUST_PROXY as what is in front: nothing, a hop count, or the trusted proxy addresses', () => {
      expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
      expect(loadConfig({ TRUST_PROXY: '0' }).trustProxy).toBe(false);
      expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
      expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
      expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,192.168.1.7, fd00::/8' }).trustProxy).toEqual([
        'loopback',
        '10.0.0.0/8',
        '192.168.1.7',
        'fd00::/8',
      ]);
    });

    it('refuses TRUST_PROXY=true (every X-Forwarded-For entry, which any caller writes) in one line', () => {
      for (const value of ['true', 'TRUE', 'yes']) {
        const problems = configError({ TRUST_PROXY: value }).message.split('\n  - ').slice(1);
        expect(problems).toHaveLength(1);
        expect(problems[0]).toMatch(/^TRUST_PROXY=.* hop count .*addresses/);
      }
    });

    it('reads SMPP_RECEIPT_ID_FORM: same, hex, decimal or auto', () => {
      for (const form of ['same', 'hex', 'decimal', 'auto']) {
        expect(loadConfig({ SMPP_RECEIPT_ID_FORM: form }).mobile.smpp.receiptIdForm).toBe(form);
      }
    });

    it('reads SMPP_RECEIPT_UTC_OFFSET as minutes east of UTC (UTC when unset)', () => {
      expect(loadConfig({}).mobile.smpp.receiptUtcOffsetMinutes).toBe(0);
      expect(loadConfig({ SMPP_RECEIPT_UTC_OFFSET: '-03:00' }).mobile.smpp.receiptUtcOffsetMinutes).toBe(
        -180,
      );
      expect(loadConfig({ SMPP_RECEIPT_UTC_OFFSET: '+05:30' }).mobile.smpp.receiptUtcOffsetMinutes).toBe(330);
      expect(loadConfig({ SMPP_RECEIPT_UTC_OFFSET: '-00:00' }).mobile.smpp.receiptUtcOffsetMinutes).toBe(0);
    });

    it('treats blank values as unset', () => {
      const config = loadConfig({ PORT: '  ', DATABASE_URL: '', LOG_LEVEL: ' ' });
      expect(config.port).toBe(3000);
      expect(config.databaseUrl).toBeUndefined();
      expect(config.logLevel).toBe('info');
    });
  });

  describe('invalid settings', () => {
    it.each([
      ['PORT', 'abc'],
      ['PORT', '70000'],
      ['PUBLIC_BASE_URL', 'http://localhost:3000/api/'],
      ['PUBLIC_BASE_URL', 'ftp://localhost/v1/'],
      ['PUBLIC_BASE_URL', 'http://localhost:3000/v1/?a=b'],
      ['PUBLIC_BASE_URL', 'http://localhost:3000/v1/#top'],
      ['PUBLIC_BASE_URL', 'http://localhost:3000/v1/?'], // a bare ? or #: empty search and hash, kept in the text
      ['PUBLIC_BASE_URL', 'http://localhost:3000/v1/#'],
      ['PUBLIC_BASE_URL', 'http://ops:secret@localhost:3000/v1/'],
      ['DATABASE_URL', 'mysql://x'],
      ['REDIS_URL', 'http://x'],
      ['WEBHOOK_RETRY_DELAYS', '5x'],
      ['WEBHOOK_RETRY_DELAYS', '5s,,1m'],
      ['WEBHOOK_RETRY_DELAYS', '5s,8d'], // over a week: its milliseconds overflowed the recording's int
      ['BODY_LIMIT', 'tiny'],
      ['BODY_LIMIT', '512b'],
      ['NODE_ENV', 'staging'],
      ['LOG_LEVEL', 'loud'],
      ['WEBHOOK_ALLOW_PRIVATE_URLS', 'maybe'],
      ['TRUST_PROXY', 'sometimes'],
      ['TRUST_PROXY', 'true'],
      ['TRUST_PROXY', '1.5'],
      ['TRUST_PROXY', '100'],
      ['TRUST_PROXY', 'loopback,'],
      ['TRUST_PROXY', '10.0.0.0/33'],
      ['TRUST_PROXY', '0.0.0.0/0'], // every address: the same as true
      ['TRUST_PROXY', 'lb.internal'],
      ['ACCESS_TOKEN_TTL_SECONDS', '30'],
      ['DATABASE_POOL_SIZE', '0'],
      ['DB_STATEMENT_TIMEOUT_MS', '-1'],
      ['HTTP_HEADERS_TIMEOUT_MS', '50'],
      ['HTTP_HEADERS_TIMEOUT_MS', '40000'], // longer than the whole request (30 s)
      ['EVENTS_RETENTION_DAYS', '0'],
      ['EVENTS_RETENTION_DAYS', 'a month'],
      ['SMPP_RECEIPT_ID_FORM', 'base36'],
      ['SMPP_RECEIPT_ID_FORM', 'HEX'],
      ['SMPP_RECEIPT_UTC_OFFSET', '-3'],
      ['SMPP_RECEIPT_UTC_OFFSET', 'ART'],
      ['SMPP_RECEIPT_UTC_OFFSET', '-03:60'],
      ['SMPP_RECEIPT_UTC_OFFSET', '+15:00'],
    ])('%s=%s throws a ConfigError naming the variable', (name, value) => {
      const error = configError({ [name]: value });
      expect(error.name).toBe('ConfigError');
      expect(error.message).toMatch(/^Invalid configuration:/);
      expect(error.message).toContain(name);
      // One problem only: the other (default) settings are fine.
      expect(error.message.split('\n  - ')).toHaveLength(2);
    });

    it('names every bad setting in one error', () => {
      const error = configError({
        PORT: 'abc',
        DATABASE_URL: 'mysql://x',
        REDIS_URL: 'http://x',
        BODY_LIMIT: 'tiny',
        LOG_LEVEL: 'loud',
      });
      const problems = error.message.split('\n  - ').slice(1);
      expect(problems).toHaveLength(5);
      for (const name of ['PORT', 'DATABASE_URL', 'REDIS_URL', 'BODY_LIMIT', 'LOG_LEVEL']) {
        expect(problems.filter((line) => line.startsWith(name))).toHaveLength(1);
      }
    });

    it('requires SIGNING_KEYS_FILE in production', () => {
      const error = configError({ NODE_ENV: 'production' });
      expect(error.message).toContain('SIGNING_KEYS_FILE is required when NODE_ENV=production');
      expect(() => loadConfig({ NODE_ENV: 'production', SIGNING_KEYS_FILE: '/keys.json' })).not.toThrow();
    });
  });

  it('returns a frozen object', () => {
    const config = loadConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      (config as { port: number }).port = 1;
    }).toThrow(TypeError);
    expect(config.port).toBe(3000);
  });
});

describe('parseDuration', () => {
  it.each([
    ['0ms', 0],
    ['250ms', 250],
    ['5s', 5_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    [' 30s ', 30_000],
  ])('%j is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '5', '5x', '1.5s', '-5s', 's', '5 s', '5S'])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('document storage settings', () => {
  it('defaults to local disk', () => {
    expect(loadConfig({}).documentStorage).toEqual({ kind: 'local' });
  });

  it('removes bytes no row names after a week, daily, at most 20 a run; the worker not at all with an interval of 0', () => {
    expect(loadConfig({})).toMatchObject({
      documentReaperGraceHours: 168,
      documentReaperIntervalHours: 24,
      documentReaperMaxOrphans: 20,
    });
    expect(
      loadConfig({ DOCUMENT_REAPER_GRACE_HOURS: '72', DOCUMENT_REAPER_INTERVAL_HOURS: '0' }),
    ).toMatchObject({ documentReaperGraceHours: 72, documentReaperIntervalHours: 0 });
    // Less than an hour could reach an upload still recording its row.
    expect(configError({ DOCUMENT_REAPER_GRACE_HOURS: '0' }).message).toContain(
      'DOCUMENT_REAPER_GRACE_HOURS',
    );
    expect(configError({ DOCUMENT_REAPER_INTERVAL_HOURS: '1h' }).message).toContain(
      'DOCUMENT_REAPER_INTERVAL_HOURS',
    );
    expect(loadConfig({ DOCUMENT_REAPER_MAX_ORPHANS: '500' })).toMatchObject({
      documentReaperMaxOrphans: 500,
    });
    expect(configError({ DOCUMENT_REAPER_MAX_ORPHANS: '0' }).message).toContain(
      'DOCUMENT_REAPER_MAX_ORPHANS',
    );
  });

  it('reads an S3-compatible bucket, path-style when an endpoint is given', () => {
    expect(
      loadConfig({
        DOCUMENT_STORAGE: 's3',
        S3_BUCKET: 'docs',
        S3_ENDPOINT: 'http://minio.internal:9000',
        S3_ACCESS_KEY_ID: 'id',
        S3_SECRET_ACCESS_KEY: 'secret',
        S3_KEY_PREFIX: '/kyc/',
      }).documentStorage,
    ).toEqual({
      kind: 's3',
      bucket: 'docs',
      region: 'us-east-1',
      endpoint: 'http://minio.internal:9000',
      accessKeyId: 'id',
      secretAccessKey: 'secret',
      forcePathStyle: true,
      keyPrefix: 'kyc',
    });
    expect(loadConfig({ DOCUMENT_STORAGE: 's3', S3_BUCKET: 'docs' }).documentStorage).toMatchObject({
      endpoint: undefined,
      forcePathStyle: false,
      accessKeyId: undefined,
    });
  });

  it.each([
    [{ DOCUMENT_STORAGE: 'ftp' }, 'DOCUMENT_STORAGE'],
    [{ DOCUMENT_STORAGE: 's3' }, 'S3_BUCKET'],
    [{ DOCUMENT_STORAGE: 's3', S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'id' }, 'S3_SECRET_ACCESS_KEY'],
    [{ DOCUMENT_STORAGE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'not a url' }, 'S3_ENDPOINT'],
  ])('refuses %j naming %s', (env, name) => {
    expect(() => loadConfig(env)).toThrow(name);
  });
});

describe('the documented settings', () => {
  /** Every variable loadConfig reads, on the default path and on the branches that read more (S3 storage). */
  const read = new Set<string>();
  for (const env of [{}, { DOCUMENT_STORAGE: 's3', S3_BUCKET: 'docs' }, { NODE_ENV: 'production' }]) {
    const recording = new Proxy(env as Record<string, string | undefined>, {
      get(target, name) {
        if (typeof name === 'string') read.add(name);
        return target[name as string];
      },
    });
    try {
      loadConfig(recording);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error; // production without its keys file: read all the same
    }
  }

  it('reads the variables it is known to (the recording works)', () => {
    expect([...read]).toEqual(
      expect.arrayContaining(['PORT', 'DATABASE_URL', 'S3_BUCKET', 'SIGNING_KEYS_FILE']),
    );
  });

  it('.env.example names every variable the service reads', () => {
    const example = readFileSync(path.join(process.cwd(), '.env.example'), 'utf8');
    const named = new Set([...example.matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1]));
    expect([...read].filter((name) => !named.has(name)).sort()).toEqual([]);
  });

  it("README's configuration table names every variable the service reads", () => {
    const readme = readFileSync(path.join(process.cwd(), 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Configuration\n'));
    const rows = section
      .slice(0, section.indexOf('\n## ', 1))
      .split('\n')
      .filter((line) => line.startsWith('| `'));
    const named = new Set(
      rows.flatMap((row) => [...row.split('|')[1].matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1])),
    );
    expect([...read].filter((name) => !named.has(name)).sort()).toEqual([]);
  });
});
