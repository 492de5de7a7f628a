// node bench/transfer-function.mjs: the PostgreSQL cost of the money path alone, against pgbench measured in the
// same run on the same server (docs/decisions/0017-leaner-transfer-function.md). No API, no HTTP: the calls the
// TransferBatcher makes (wallet_create_transfers with groups of internal transfers built exactly as
// TransfersService builds them, each with an Idempotency-Key) from 1 and 2 connections, and pgbench tpcb-like.
//
// It reports transfers/s, the PostgreSQL CPU per transfer (utime + stime of every process of the server, from
// /proc), the WAL bytes per transfer (the insert position's advance) and the ratio to pgbench's tps, then a
// pg_stat_statements breakdown (track = all: every statement nested in the functions) of a profiled round.
//
// A/B in one run: when migrations newer than BENCH_FN_BASE (default 1763900700000, the first transfer
// function) exist, each measured round runs once on the head schema and once with those migrations reverted
// (their down(), then up() again), in the order A B B A …, so drift (tables growing, the machine's other load)
// falls on both. BENCH_FN_BASE=none measures the head only.
//
// Settings (environment): BENCH_FN_S (seconds per measured phase, 10), BENCH_FN_ROUNDS (ABBA rounds, 1),
// BENCH_FN_BATCH (transfers per call, 30; 1 = a group of one, or wallet_create_transfer where the base has it), BENCH_FN_CONNS (comma list, "1,2"), BENCH_PGBENCH_S (20),
// BENCH_FN_ACCOUNTS (1000), BENCH_FN_PREFILL (transfers written before measuring, 20000), BENCH_FN_PROFILE_CALLS (calls in the profiled round, 200), BENCH_FN_PROFILE_PER_TX (calls per transaction in it, 1), BENCH_FN_ONLY (a comma
// list of pgbench, transfers, profile, floor; the first three by default).
//
// floor (BENCH_FN_ONLY=floor BENCH_FN_BASE=none BENCH_FN_ROUNDS=4): one connection, pgbench as the client of all three,
// alternated for BENCH_FN_ROUNDS rounds of BENCH_FN_S seconds: tpcb-like, the floor (the rows of one internal transfer
// in one statement, nothing else) and the function with a group of one. bench/README.md, "The rows' own cost at one
// connection".
import { createHash, randomInt, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { onCleanup, run, runScript, scratchDir, serverCpuMicros } from './lib/procs.mjs';
import { transferBody } from './lib/service.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const env = (name, def) => process.env[name] || def;
const S = {
  seconds: Number(env('BENCH_FN_S', '10')),
  rounds: Number(env('BENCH_FN_ROUNDS', '1')),
  batch: Number(env('BENCH_FN_BATCH', '30')),
  conns: env('BENCH_FN_CONNS', '1,2').split(',').map(Number),
  pgbenchS: Number(env('BENCH_PGBENCH_S', '20')),
  accounts: Number(env('BENCH_FN_ACCOUNTS', '1000')),
  profileCalls: Number(env('BENCH_FN_PROFILE_CALLS', '200')),
  profilePerTx: Number(env('BENCH_FN_PROFILE_PER_TX', '1')),
  prefill: Number(env('BENCH_FN_PREFILL', '20000')),
  base: env('BENCH_FN_BASE', '1763900700000'),
  only: env('BENCH_FN_ONLY', 'pgbench,transfers,profile').split(','),
};
const started = performance.now();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const say = (message) =>
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${message}\n`);

const { buildIfNeeded } = await import(pathToFileURL(path.join(ROOT, 'scripts/build-if-needed.mjs')).href);
buildIfNeeded();
const tmp = scratchDir('wallet-fn-bench-');

await runScript('transfer-function bench', main);

function pgbenchBinary() {
  if (process.env.BENCH_PGBENCH) return process.env.BENCH_PGBENCH;
  for (const version of existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql') : []) {
    const candidate = `/usr/lib/postgresql/${version}/bin/pgbench`;
    if (existsSync(candidate)) return candidate;
  }
  throw new Error('no pgbench (set BENCH_PGBENCH)');
}

/** JSON with sorted keys (request-hash.ts), for the request hash. */
function canonicalJson(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

async function main() {
  const { ensureEmbeddedPostgres } = await import(
    pathToFileURL(path.join(ROOT, 'dist/src/common/database/embedded-postgres.js')).href
  );
  const { MINOR_UNITS } = await import(
    pathToFileURL(path.join(ROOT, 'dist/src/modules/wallet/money.js')).href
  );
  const { buildCvu } = await import(pathToFileURL(path.join(ROOT, 'dist/src/modules/wallet/cvu.js')).href);
  const { uuidv7 } = await import(pathToFileURL(path.join(ROOT, 'dist/src/common/ids/uuid-v7.js')).href);
  const { MIGRATIONS } = await import(pathToFileURL(path.join(ROOT, 'dist/migrations/index.js')).href);

  const dataDir = path.join(tmp, 'pg');
  const serverLog = [];
  const start = () =>
    ensureEmbeddedPostgres({
      dataDir,
      databaseName: 'wallet',
      log: (line) => serverLog.push(line),
    });
  let server = await start();
  // pg_stat_statements needs to be preloaded: set it, restart. Tracking stays off ('none') except in the
  // profiled round's sessions, so the measured phases (and pgbench) do not pay for it.
  {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
    await admin.query(`ALTER SYSTEM SET pg_stat_statements.track = 'none'`);
    await admin.query(`ALTER SYSTEM SET pg_stat_statements.max = 10000`);
    await admin.end();
    await server.stop();
    server = await start();
  }
  onCleanup(() => server.stop(15_000));
  const url = new URL(server.url);
  const pgEnv = {
    ...process.env,
    PGPASSWORD: decodeURIComponent(url.password),
    PGHOST: '127.0.0.1',
    PGPORT: String(server.port),
    PGUSER: 'postgres',
  };
  const dbUrl = (name) => Object.assign(new URL(server.url), { pathname: `/${name}` }).toString();
  const admin = new pg.Client({ connectionString: dbUrl('postgres') });
  await admin.connect();
  onCleanup(() => admin.end().catch(() => undefined));
  say(
    `PostgreSQL ${(await admin.query('SHOW server_version')).rows[0].server_version}, port ${server.port}, ` +
      `fsync ${(await admin.query('SHOW fsync')).rows[0].fsync}, ` +
      `synchronous_commit ${(await admin.query('SHOW synchronous_commit')).rows[0].synchronous_commit}`,
  );

  const pgbench = pgbenchBinary();
  if (S.only.includes('pgbench') || S.only.includes('floor')) {
    await admin.query('CREATE DATABASE pgbench_s10');
    say('pgbench -i -s 10…');
    await run(pgbench, ['-i', '-q', '-s', '10', 'pgbench_s10'], { env: pgEnv });
  }

  say('migrations…');
  await run(process.execPath, [path.join(ROOT, 'dist/src/migrate.js')], {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: server.url,
      DATA_DIR: path.join(tmp, 'service'),
      SIGNING_KEYS_FILE: path.join(tmp, 'service', 'signing-keys.json'),
      LOG_LEVEL: 'warn',
    },
    cwd: ROOT,
  });

  const db = new pg.Client({ connectionString: server.url });
  await db.connect();
  onCleanup(() => db.end().catch(() => undefined));
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');

  // One application, ACCOUNTS users with an ACTIVE account each (no fee, limits 10^11), funded 10^6 through
  // ledger_post from the adjustments account, as AccountsService.setBalance does.
  say(`${S.accounts} funded accounts…`);
  const appId = randomUUID();
  await db.query(`INSERT INTO applications (id, name) VALUES ($1, 'fn-bench')`, [appId]);
  const accounts = [];
  for (let i = 0; i < S.accounts; i++) {
    accounts.push({
      id: randomUUID(),
      user: randomUUID(),
      cvu: buildCvu('0031', 1_000_000 + i),
      cuil: `20${String(10_000_000 + i)}5`,
    });
  }
  await db.query('BEGIN');
  await db.query(
    `INSERT INTO users (id, app_id, first_name, last_name, birthdate, sex, civil_status, nationality, tax_id_type,
                        tax_id, tax_condition, category, tax_exempt, legal_address)
     SELECT u, $1, 'Bench', 'Account', '1990-04-21', 'female', 'single', 'AR', 'cuil', t, 'others',
            'consumidorFinal', false, '{}'::jsonb
       FROM unnest($2::uuid[], $3::text[]) AS x(u, t)`,
    [appId, accounts.map((a) => a.user), accounts.map((a) => a.cuil)],
  );
  await db.query(
    `INSERT INTO ledger_accounts (id, kind, code, currency, balance)
     SELECT id, 'WALLET', 'WALLET', 'ARS', 0 FROM unnest($1::uuid[]) AS x(id)`,
    [accounts.map((a) => a.id)],
  );
  await db.query(
    `INSERT INTO wallet_accounts (id, app_id, owner_type, owner_id, cvu, alias, currency, status,
        monthly_deposit_limit, monthly_withdraw_limit, annual_deposit_limit, annual_withdraw_limit, limits_id,
        fee_type, fee_amount, fees_id, operado_id)
     SELECT id, $1, 'USER', u, c, 'bench.' || n, 'ARS', 'ACTIVE', 1e11, 1e11, 1e11, 1e11, gen_random_uuid(),
            'FIXED', 0, gen_random_uuid(), gen_random_uuid()
       FROM unnest($2::uuid[], $3::uuid[], $4::text[]) WITH ORDINALITY AS x(id, u, c, n)`,
    [appId, accounts.map((a) => a.id), accounts.map((a) => a.user), accounts.map((a) => a.cvu)],
  );
  await db.query(
    `SELECT ledger_post($1, 'BALANCE_ADJUSTMENT', id::text, 'balance set to 1000000', 'fn-bench',
                        ARRAY[id, ledger_system_account('ADJUSTMENTS', 'ARS')], ARRAY[1000000, -1000000]::numeric[], 'ARS')
       FROM unnest($2::uuid[]) AS x(id)`,
    [appId, accounts.map((a) => a.id)],
  );
  await db.query('COMMIT');

  /** One request's input, as TransfersService.create builds it for a client token. */
  const transferInput = () => {
    const from = accounts[randomInt(accounts.length)];
    let to = accounts[randomInt(accounts.length)];
    while (to === from) to = accounts[randomInt(accounts.length)];
    const amount = `${randomInt(1, 10)}.${String(randomInt(0, 100)).padStart(2, '0')}`;
    const dto = JSON.parse(transferBody({ uuid: from.id }, to, Number(amount)));
    return JSON.stringify({
      id: uuidv7(),
      appId,
      subject: null,
      accountId: from.id,
      amount,
      movementType: 'WITHDRAW',
      counterparty: {
        name: 'Bench Account',
        taxId: to.cuil,
        identifierType: 'CVU',
        identifier: to.cvu,
        branch: 'Casa central',
      },
      concept: 'VAR',
      summary: null,
      actor: `client:${appId}`,
      requestId: randomUUID(),
      route: 'POST /v1/wallet/transactions',
      taxRate: '0',
      minorUnits: MINOR_UNITS,
      timeZone: 'America/Argentina/Buenos_Aires',
      idempotencyKey: randomUUID(),
      requestHash: createHash('sha256').update(canonicalJson(dto)).digest('hex'),
    });
  };
  const batchInput = () => `[${Array.from({ length: S.batch }, transferInput).join(',')}]`;
  /**
   * One call as TransferBatcher makes it: a group through wallet_create_transfers, named statement, the answers
   * as an array. With BENCH_FN_BATCH=1, a schema that still has the single call's wallet_create_transfer (a base
   * older than migration 1763902300000) gets that instead, as its TransferBatcher did.
   */
  const callOnce = async (client) => {
    if (S.batch === 1 && singleCall) {
      const { rows } = await client.query({
        name: 'fn-bench-one',
        text: 'SELECT wallet_create_transfer($1::jsonb) AS r',
        values: [transferInput()],
      });
      return [rows[0].r];
    }
    const { rows } = await client.query({
      name: 'fn-bench-group',
      text: 'SELECT wallet_create_transfers($1::jsonb) AS r',
      values: [batchInput()],
    });
    return rows[0].r;
  };

  const clients = [];
  for (let i = 0; i < Math.max(...S.conns); i++) {
    const client = new pg.Client({ connectionString: server.url, application_name: `fn-bench-${i}` });
    await client.connect();
    clients.push(client);
    onCleanup(() => client.end().catch(() => undefined));
  }

  /** The server's WAL insert position, in bytes (the difference of two is the WAL written between them). */
  const walPosition = async () =>
    Number((await admin.query(`SELECT pg_current_wal_insert_lsn() - '0/0' AS b`)).rows[0].b);
  /** `conns` connections calling wallet_create_transfers back to back for `seconds`. */
  const transfersPhase = async (conns, seconds) => {
    await admin.query('CHECKPOINT');
    const wal0 = await walPosition();
    const cpu0 = serverCpuMicros(server.pid);
    const t0 = performance.now();
    const deadline = t0 + seconds * 1000;
    let done = 0;
    let refused = 0;
    let calls = 0;
    await Promise.all(
      clients.slice(0, conns).map(async (client) => {
        while (performance.now() < deadline) {
          const answers = await callOnce(client);
          calls++;
          for (const result of answers) {
            if (result.refused) refused++;
            else done++;
          }
        }
      }),
    );
    const wall = (performance.now() - t0) / 1000;
    const cpu = serverCpuMicros(server.pid) - cpu0;
    const wal = (await walPosition()) - wal0;
    if (refused) throw new Error(`${refused} transfers refused in a phase that should refuse none`);
    return {
      tps: done / wall,
      cpuUsPerTransfer: cpu / done,
      walBytesPerTransfer: wal / done,
      calls,
      serverCpuPct: cpu / 1e4 / wall,
    };
  };

  /**
   * One pgbench run after a CHECKPOINT: its output, and the server's CPU (every process, from /proc) and WAL per
   * transaction it processed.
   */
  const measuredPgbench = async (args) => {
    await admin.query('CHECKPOINT');
    const wal0 = await walPosition();
    const cpu0 = serverCpuMicros(server.pid);
    const { stdout } = await run(pgbench, ['-M', 'prepared', ...args], { env: pgEnv });
    const cpu = serverCpuMicros(server.pid) - cpu0;
    const count = Number(/number of transactions actually processed: (\d+)/.exec(stdout)?.[1]);
    const wal = (await walPosition()) - wal0;
    return { stdout, cpuUsPerTransaction: cpu / count, walBytesPerTransaction: wal / count };
  };
  const pgbenchPhase = async () => {
    const { stdout, cpuUsPerTransaction, walBytesPerTransaction } = await measuredPgbench([
      '-c',
      '32',
      '-j',
      '2',
      '-T',
      String(S.pgbenchS),
      'pgbench_s10',
    ]);
    return { tps: Number(/tps = ([\d.]+)/.exec(stdout)?.[1]), cpuUsPerTransaction, walBytesPerTransaction };
  };

  // The schema variants: head, and head with the migrations after BENCH_FN_BASE reverted.
  const newer =
    S.base === 'none'
      ? []
      : MIGRATIONS.filter((M) => Number(/(\d{13})$/.exec(new M().name)?.[1]) > Number(S.base));
  const runner = { query: (sql, params) => db.query(sql, params).then((r) => r.rows) };
  let current = 'head';
  let singleCall = false;
  const use = async (variant) => {
    if (variant === current) return;
    if (variant === 'base') for (const M of [...newer].reverse()) await new M().down(runner);
    else for (const M of newer) await new M().up(runner);
    // No cached plans of the other variant (DISCARD ALL drops the named statements too: pg must parse them again).
    for (const client of clients) {
      await client.query('DISCARD ALL');
      client.connection.parsedStatements = {};
    }
    current = variant;
    singleCall =
      (await db.query(`SELECT to_regprocedure('wallet_create_transfer(jsonb)') AS f`)).rows[0].f !== null;
  };
  const variants = newer.length ? ['head', 'base'] : ['head'];
  say(
    `variants: ${variants.join(', ')}${newer.length ? ` (base = head without ${newer.map((M) => new M().name).join(', ')})` : ''}`,
  );

  // Tables of a service that has run for a while, with statistics: BENCH_FN_PREFILL transfers, then VACUUM
  // ANALYZE (with the statistics of empty tables, the cached generic plans scan transfers and operated_amounts
  // sequentially until autovacuum analyzes them).
  say(`prefill: ${S.prefill} transfers…`);
  for (let done = 0; done < S.prefill; done += S.batch) await callOnce(clients[0]);
  await db.query('VACUUM ANALYZE');
  // Warm up (and prove that nothing is refused) on every variant.
  for (const variant of variants) {
    await use(variant);
    await transfersPhase(Math.max(...S.conns), 3);
  }
  await use('head');

  /**
   * One connection, three transactions through the same client (pgbench -M prepared -c 1), alternated round by
   * round: tpcb-like; the floor, the rows one internal transfer writes (both balances, both operated amounts, the
   * journal entry, its two postings, the two transfer rows, the receiver's event, the audit record and the
   * Idempotency-Key with its answer: a real transfer's values, fresh ids) as one statement of data-modifying CTEs,
   * with no read, check or logic besides; and the function with a group of one, its JSON built in the statement.
   * The floor is what PostgreSQL's own work for the rows costs at one connection: its ratio to tpcb-like bounds
   * latencyC1PerPgbench from below for any code that writes those rows.
   */
  async function floorPhases() {
    await db.query(`CREATE TABLE bench_acc (n integer PRIMARY KEY, id uuid NOT NULL, cvu text NOT NULL)`);
    await db.query(
      `INSERT INTO bench_acc SELECT n, id, c FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS x(id, c, n)`,
      [accounts.map((a) => a.id), accounts.map((a) => a.cvu)],
    );
    await db.query('ANALYZE bench_acc');
    // A real transfer of the prefill: its answer, event, audit action and period, reused as literals.
    const one = async (what, sql, params) => {
      const { rows } = await db.query(sql, params);
      if (!rows[0]) throw new Error(`no prefilled ${what} to copy`);
      return rows[0];
    };
    const t = await one(
      'internal transfer',
      `SELECT id, linked_transfer_id, account_id, counterparty_name AS cp_name, counterparty_tax_id AS cp_tax, concept
         FROM transfers WHERE movement_type = 'WITHDRAW' AND route = 'INTERNAL' LIMIT 1`,
    );
    const real = {
      ...t,
      ...(await one(
        'answer',
        `SELECT response_body::text AS body, request_hash AS hash FROM idempotency_keys WHERE response_body::text LIKE $1`,
        [`%${t.id}%`],
      )),
      ...(await one('event', `SELECT payload::text AS payload FROM webhook_events WHERE subject = $1`, [
        t.linked_transfer_id,
      ])),
      ...(await one(
        'audit record',
        `SELECT action, principal_type, principal FROM audit_records WHERE resource_id = $1`,
        [t.id],
      )),
      ...(await one('period', `SELECT period FROM operated_amounts WHERE account_id = $1`, [t.account_id])),
    };
    // The literals live in a table: pgbench would take the colons of their times for its variables.
    await db.query(
      `CREATE TABLE bench_lit AS SELECT $1::jsonb AS body, $2::text AS hash, $3::jsonb AS payload, $4::text AS action,
              $5::text AS principal_type, $6::text AS principal, $7::text AS period, $8::text AS cp_name, $9::text AS cp_tax,
              $10::text AS concept, $11::uuid AS app, $12::text AS actor, $13::jsonb AS units`,
      [
        real.body,
        real.hash,
        real.payload,
        real.action,
        real.principal_type,
        real.principal,
        real.period,
        real.cp_name,
        real.cp_tax,
        real.concept,
        appId,
        `client:${appId}`,
        JSON.stringify(MINOR_UNITS),
      ],
    );
    const n = accounts.length;
    const pick = `\\set a random(1, ${n})\n\\set b random(1, ${n - 1})\n\\set b CASE WHEN :b >= :a THEN :b + 1 ELSE :b END\n\\set amt random(100, 999)\n`;
    const floorSql = `${pick}WITH s AS MATERIALIZED (SELECT (SELECT id FROM bench_acc WHERE n = :a) AS src, r.id AS dst, r.cvu,
  round(:amt / 100.0, 2) AS amount, uuidv7() AS wid, uuidv7() AS did, uuidv7() AS eid, l.*
  FROM bench_acc r, bench_lit l WHERE r.n = :b),
bal AS (UPDATE ledger_accounts a SET balance = a.balance + d.amount FROM s,
  LATERAL (VALUES (s.src, -s.amount), (s.dst, s.amount)) AS d(id, amount) WHERE a.id = d.id RETURNING 1),
op AS (INSERT INTO operated_amounts AS o (account_id, period, deposit, withdraw)
  SELECT d.* FROM s, LATERAL (VALUES (s.src, s.period, 0::numeric, s.amount), (s.dst, s.period, s.amount, 0::numeric)) AS d
  ON CONFLICT (account_id, period) DO UPDATE SET deposit = o.deposit + EXCLUDED.deposit,
    withdraw = o.withdraw + EXCLUDED.withdraw, updated_at = now() RETURNING 1),
je AS (INSERT INTO journal_entries (id, app_id, kind, reference, description, actor)
  SELECT s.eid, s.app, 'INTERNAL_TRANSFER', s.wid::text, NULL, s.actor FROM s RETURNING 1),
po AS (INSERT INTO postings (entry_id, account_id, amount, currency)
  SELECT s.eid, d.id, d.amount, 'ARS' FROM s, LATERAL (VALUES (s.src, -s.amount), (s.dst, s.amount)) AS d(id, amount) RETURNING 1),
tr AS (INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name, counterparty_tax_id,
    counterparty_identifier_type, counterparty_identifier, counterparty_branch, counterparty_account_id,
    linked_transfer_id, amount, currency, fees, taxes, concept, summary)
  SELECT d.* FROM s, LATERAL (VALUES
    (s.wid, s.app, s.src, 'WITHDRAW', 'ACREDITADO', 'INTERNAL', s.cp_name, s.cp_tax, 'CVU', s.cvu,
     'Casa central', s.dst, s.did, s.amount, 'ARS', 0::numeric, 0::numeric, s.concept, NULL::text),
    (s.did, s.app, s.dst, 'DEPOSIT', 'ACREDITADO', 'INTERNAL', s.cp_name, s.cp_tax, 'CVU', s.cvu,
     NULL, s.src, s.wid, s.amount, 'ARS', 0::numeric, 0::numeric, s.concept, NULL::text)) AS d RETURNING 1),
ev AS (INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
  SELECT uuidv7(), s.app, 'transfer_update', s.did::text, s.payload, 'pending', now() FROM s RETURNING 1),
au AS (INSERT INTO audit_records (app_id, principal_type, principal, action, resource_type, resource_id, outcome, request_id)
  SELECT s.app, s.principal_type, s.principal, s.action, 'transfer', s.wid::text, 'ACREDITADO', gen_random_uuid()::text
    FROM s RETURNING 1),
ik AS (INSERT INTO idempotency_keys (app_id, key, request_hash, response_status, response_body)
  SELECT s.app, gen_random_uuid()::text, s.hash, 201, s.body FROM s RETURNING 1)
SELECT (SELECT count(*) FROM bal) + (SELECT count(*) FROM op) + (SELECT count(*) FROM je) + (SELECT count(*) FROM po)
     + (SELECT count(*) FROM tr) + (SELECT count(*) FROM ev) + (SELECT count(*) FROM au) + (SELECT count(*) FROM ik) AS rows;
`;
    const fnSql = `${pick}SELECT wallet_create_transfers(jsonb_build_array(jsonb_build_object(
  'id', uuidv7(), 'appId', l.app, 'subject', NULL, 'accountId', (SELECT id FROM bench_acc WHERE n = :a),
  'amount', round(:amt / 100.0, 2)::text, 'movementType', 'WITHDRAW',
  'counterparty', jsonb_build_object('name', l.cp_name, 'taxId', l.cp_tax, 'identifierType', 'CVU',
     'identifier', (SELECT cvu FROM bench_acc WHERE n = :b), 'branch', 'Casa central'),
  'concept', l.concept, 'summary', NULL, 'actor', l.actor, 'requestId', gen_random_uuid(),
  'route', 'POST /v1/wallet/transactions', 'taxRate', '0', 'minorUnits', l.units,
  'timeZone', 'America/Argentina/Buenos_Aires', 'idempotencyKey', gen_random_uuid()::text, 'requestHash', l.hash)))
  FROM bench_lit l;
`;
    const floorFile = path.join(tmp, 'floor.sql');
    const fnFile = path.join(tmp, 'function-one.sql');
    writeFileSync(floorFile, floorSql);
    writeFileSync(fnFile, fnSql);
    // Each script once by hand: the floor writes its twelve rows and balances, the function does not refuse.
    {
      const probe = await db.query(`SELECT count(*)::int AS n FROM postings`);
      await run(pgbench, ['-n', '-M', 'prepared', '-c', '1', '-t', '20', '-f', floorFile, 'wallet'], {
        env: pgEnv,
      });
      await run(pgbench, ['-n', '-M', 'prepared', '-c', '1', '-t', '20', '-f', fnFile, 'wallet'], {
        env: pgEnv,
      });
      const after = await db.query(`SELECT count(*)::int AS n FROM postings`);
      const written = after.rows[0].n - probe.rows[0].n;
      if (written !== 80) {
        const one = fnSql
          .split('\n')
          .filter((line) => !line.startsWith('\\'))
          .join('\n')
          .replaceAll(':amt', '150')
          .replaceAll(':a', '1')
          .replaceAll(':b', '2');
        const answer = JSON.stringify((await db.query(one)).rows[0]);
        throw new Error(
          `the two scripts wrote ${written} postings in 40 transfers, not 80; the function answers ${answer}`,
        );
      }
    }
    const kinds = [
      { name: 'tpcb-like', args: ['-b', 'tpcb-like', 'pgbench_s10'] },
      { name: 'floor', args: ['-n', '-f', floorFile, 'wallet'] },
      { name: 'function', args: ['-n', '-f', fnFile, 'wallet'] },
    ];
    const floorRuns = [];
    for (let round = 0; round < Math.max(S.rounds, 1); round++) {
      const order = round % 2 === 0 ? kinds : [...kinds].reverse();
      for (const kind of order) {
        const measured = await measuredPgbench(['-c', '1', '-T', String(S.seconds), ...kind.args]);
        const r = {
          kind: kind.name,
          latencyMs: Number(/latency average = ([\d.]+) ms/.exec(measured.stdout)?.[1]),
          cpuUs: measured.cpuUsPerTransaction,
          walBytes: measured.walBytesPerTransaction,
        };
        floorRuns.push(r);
        say(
          `  round ${round + 1} ${r.kind.padEnd(9)} ${r.latencyMs.toFixed(3)} ms, ${r.cpuUs.toFixed(0)} µs PG CPU, ${r.walBytes.toFixed(0)} B of WAL`,
        );
      }
    }
    const med = (kind, key) => median(floorRuns.filter((r) => r.kind === kind).map((r) => r[key]));
    const tpcb = med('tpcb-like', 'latencyMs');
    for (const kind of kinds) {
      floorLines.push(
        `1 client ${kind.name}: ${med(kind.name, 'latencyMs').toFixed(3)} ms (÷ tpcb-like ${(med(kind.name, 'latencyMs') / tpcb).toFixed(2)}), ` +
          `${med(kind.name, 'cpuUs').toFixed(0)} µs PG CPU, ${med(kind.name, 'walBytes').toFixed(0)} B of WAL per transaction`,
      );
    }
  }

  const results = [];
  const floorLines = [];
  const pgbenchRuns = [];
  const sayPgbench = (r) =>
    say(
      `  ${r.tps.toFixed(0)} tps, ${r.cpuUsPerTransaction.toFixed(0)} µs PG CPU/tx, ` +
        `${r.walBytesPerTransaction.toFixed(0)} B of WAL/tx`,
    );
  if (S.only.includes('pgbench')) {
    say(`pgbench tpcb-like -M prepared -c 32 -j 2 -T ${S.pgbenchS}…`);
    pgbenchRuns.push(await pgbenchPhase());
    sayPgbench(pgbenchRuns.at(-1));
  }
  if (S.only.includes('transfers')) {
    for (let round = 0; round < S.rounds; round++) {
      const order = round % 2 === 0 ? variants : [...variants].reverse();
      for (const variant of [...order, ...[...order].reverse()]) {
        await use(variant);
        for (const conns of S.conns) {
          const r = await transfersPhase(conns, S.seconds);
          results.push({ variant, conns, ...r });
          say(
            `  ${variant.padEnd(4)} ${conns} conn: ${r.tps.toFixed(0)} transfers/s, ${r.cpuUsPerTransfer.toFixed(0)} µs ` +
              `PG CPU/transfer, ${r.walBytesPerTransfer.toFixed(0)} B of WAL/transfer, PG CPU ${r.serverCpuPct.toFixed(0)}%, ` +
              `${r.calls} calls`,
          );
        }
      }
    }
  }
  if (S.only.includes('floor')) await floorPhases();
  if (S.only.includes('pgbench')) {
    say('pgbench again…');
    pgbenchRuns.push(await pgbenchPhase());
    sayPgbench(pgbenchRuns.at(-1));
  }

  // Summary: the median per variant and connection count, against the mean of the pgbench runs.
  const pgbenchTps = pgbenchRuns.length
    ? pgbenchRuns.reduce((s, r) => s + r.tps, 0) / pgbenchRuns.length
    : NaN;
  const pgbenchCpu = pgbenchRuns.length
    ? pgbenchRuns.reduce((s, r) => s + r.cpuUsPerTransaction, 0) / pgbenchRuns.length
    : NaN;
  const lines = pgbenchRuns.length
    ? [`pgbench s10 -c 32: ${pgbenchTps.toFixed(0)} tps, ${pgbenchCpu.toFixed(0)} µs PG CPU per transaction`]
    : [];
  for (const variant of variants) {
    for (const conns of S.conns) {
      const mine = results.filter((r) => r.variant === variant && r.conns === conns);
      if (!mine.length) continue;
      const tps = median(mine.map((r) => r.tps));
      const cpu = median(mine.map((r) => r.cpuUsPerTransfer));
      lines.push(
        `${variant} ${conns} conn, batch ${S.batch}: ${tps.toFixed(0)} transfers/s (÷ pgbench ${(tps / pgbenchTps).toFixed(2)}), ` +
          `${cpu.toFixed(0)} µs PG CPU per transfer (÷ pgbench tx ${(cpu / pgbenchCpu).toFixed(2)}) [${mine.map((r) => r.tps.toFixed(0)).join(' ')}]`,
      );
    }
  }

  if (S.only.includes('profile')) {
    for (const variant of variants) {
      await use(variant);
      const client = clients[0];
      await client.query(`SET pg_stat_statements.track = 'all'`);
      await client.query(`SET pg_stat_statements.track_planning = on`);
      await client.query(`SET track_functions = 'all'`);
      await client.query('SELECT pg_stat_reset()');
      if (process.env.BENCH_FN_EXPLAIN_MS) {
        // auto_explain of every nested statement slower than BENCH_FN_EXPLAIN_MS, printed from the server log.
        await client.query(`LOAD 'auto_explain'`);
        await client.query(
          `SET auto_explain.log_min_duration = '${Number(process.env.BENCH_FN_EXPLAIN_MS)}ms'`,
        );
        await client.query(`SET auto_explain.log_nested_statements = on`);
        await client.query(`SET auto_explain.log_analyze = on`);
        await client.query(`SET auto_explain.log_buffers = on`);
        serverLog.length = 0;
      }
      await client.query('SELECT pg_stat_statements_reset()');
      let done = 0;
      for (let i = 0; i < S.profileCalls; i++) {
        // BENCH_FN_PROFILE_PER_TX calls share a transaction: what every transaction builds again shows as the
        // difference per call.
        if (S.profilePerTx > 1 && i % S.profilePerTx === 0) await client.query('BEGIN');
        done += (await callOnce(client)).length;
        if (S.profilePerTx > 1 && (i % S.profilePerTx === S.profilePerTx - 1 || i === S.profileCalls - 1)) {
          await client.query('COMMIT');
        }
      }
      await client.query(`SET pg_stat_statements.track = 'none'`);
      await client.query(`SET track_functions = 'none'`);
      // Per function (pg_stat_user_functions): self = its own PL/pgSQL and expressions, not the statements and
      // functions it calls; the statistics reach the view when the session reports them (at most once a second).
      const { rows: fns } = await (async () => {
        for (let i = 0; ; i++) {
          const answer = await client.query(
            `SELECT funcname, calls, total_time AS total_ms, self_time AS self_ms FROM pg_stat_user_functions
              ORDER BY total_time DESC`,
          );
          if (answer.rows.length > 0 || i >= 20) return answer;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      })();
      if (process.env.BENCH_FN_EXPLAIN_MS) {
        await client.query(`SET auto_explain.log_min_duration = -1`);
        process.stdout.write(
          `\n== auto_explain, ${variant} (first 400 lines) ==\n${serverLog.slice(0, 400).join('\n')}\n`,
        );
      }
      const { rows } = await db.query(
        `SELECT calls, total_exec_time AS ms, plans, total_plan_time AS plan_ms, rows,
                regexp_replace(query, '\\s+', ' ', 'g') AS query
           FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          ORDER BY total_exec_time DESC LIMIT 30`,
      );
      process.stdout.write(
        `\n== pg_stat_statements, ${variant}: ${S.profileCalls} calls of ${S.batch} (${done} transfers), µs per transfer ==\n`,
      );
      for (const row of fns) {
        process.stdout.write(
          `${((row.total_ms * 1000) / done).toFixed(1).padStart(8)} µs total, ` +
            `${((row.self_ms * 1000) / done).toFixed(1).padStart(6)} µs self ${String(row.calls).padStart(7)} calls  ` +
            `function ${row.funcname}\n`,
        );
      }
      for (const row of rows) {
        process.stdout.write(
          `${((row.ms * 1000) / done).toFixed(1).padStart(8)} µs ${String(row.calls).padStart(7)} calls ` +
            `${(row.calls / done).toFixed(2).padStart(5)}/tr ` +
            `${row.plans ? `${((row.plan_ms * 1000) / done).toFixed(1)} µs planning in ${row.plans} plans ` : ''}` +
            ` ${row.query.slice(0, 150)}\n`,
        );
      }
    }
  }

  lines.push(...floorLines);
  process.stdout.write(`\n== transfer function vs pgbench (same run) ==\n${lines.join('\n')}\n`);

  // The ledger still balances: every wallet + system account sums to zero, cached balances match postings.
  const { rows: check } = await db.query(
    `SELECT (SELECT coalesce(sum(amount), 0) FROM postings) AS total,
            (SELECT count(*) FROM ledger_accounts a WHERE a.kind = 'WALLET'
                AND a.balance <> (SELECT coalesce(sum(amount), 0) FROM postings p WHERE p.account_id = a.id)) AS off`,
  );
  if (Number(check[0].total) !== 0 || Number(check[0].off) !== 0)
    throw new Error(`ledger does not balance: ${JSON.stringify(check[0])}`);
  say('ledger balances');
}
