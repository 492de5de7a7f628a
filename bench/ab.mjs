// node bench/ab.mjs <checkout A> <checkout B>: which of two versions of the service is faster on the money path,
// measured side by side (bench/README.md, "Comparing two versions"). Both APIs run at once, each from its own
// checkout (built, `npm run build`) on its own database of one embedded PostgreSQL server, with one Redis; their
// loads alternate (A B, then B A, …) so that the machine's drift falls on both, and each round's B ÷ A is one
// paired sample. A whole `npm run bench` per version reads ±10–30 % between runs on these shared machines; a
// round here reads within a few per cent, and A against itself reads 0.99.
//
// Phases (AB_PHASES, comma list): c1 (internal transfers at 1 connection: mean latency), uniform (internal
// transfers between random accounts at 32 connections: transfers/s). Settings: AB_ROUNDS (8), AB_S (6 measured
// seconds per load, after 2 s of warm-up), AB_ACCOUNTS (1000), AB_ENV_A and AB_ENV_B (`NAME=value …`, extra
// environment of one side's API: the same checkout twice with two settings), AB_NODE_ARGS (Node options for both APIs,
// e.g. `--cpu-prof`, which Node 20 refuses in NODE_OPTIONS: each API writes its profile into its checkout). Each load reports the API's CPU per
// transfer and the PostgreSQL server's (every process). Exits 1 when any answer is not 2xx.
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import {
  cpuMicros,
  freePort,
  onCleanup,
  run,
  runScript,
  scratchDir,
  serverCpuMicros,
  startProcess,
} from './lib/procs.mjs';
import { accessToken, createFundedAccounts, newKeyPair, transferBody } from './lib/service.mjs';

const [dirA, dirB] = process.argv.slice(2).map((dir) => dir && path.resolve(dir));
if (!dirA || !dirB) {
  process.stderr.write('usage: node bench/ab.mjs <checkout A> <checkout B>\n');
  process.exit(2);
}
const env = (name, def) => process.env[name] || def;
const S = {
  rounds: Number(env('AB_ROUNDS', '8')),
  seconds: Number(env('AB_S', '6')),
  accounts: Number(env('AB_ACCOUNTS', '1000')),
  phases: env('AB_PHASES', 'c1,uniform').split(','),
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const tmp = scratchDir('wallet-ab-');

await runScript('ab', main);

async function main() {
  const { ensureEmbeddedPostgres } = await import(
    pathToFileURL(path.join(dirA, 'dist/src/common/database/embedded-postgres.js')).href
  );
  const server = await ensureEmbeddedPostgres({
    dataDir: path.join(tmp, 'pg'),
    databaseName: 'postgres',
    log: () => undefined,
  });
  onCleanup(() => server.stop(15_000));
  const dbUrl = (name) => Object.assign(new URL(server.url), { pathname: `/${name}` }).toString();
  const admin = new pg.Client({ connectionString: dbUrl('postgres') });
  await admin.connect();
  onCleanup(() => admin.end().catch(() => undefined));
  const redisPort = await freePort();
  await startProcess(
    'redis-server',
    'redis-server',
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { env: process.env, logFile: path.join(tmp, 'redis.log'), readyLine: 'Ready to accept connections' },
  );

  const services = [await start('a', dirA), await start('b', dirB)];
  await admin.query('CHECKPOINT');
  const results = { a: {}, b: {} };
  for (let round = 0; round < S.rounds; round++) {
    const order = round % 2 === 0 ? services : [...services].reverse();
    for (const phase of S.phases) {
      for (const service of order) {
        const result = await load(service, phase);
        (results[service.name][phase] ??= []).push(result);
        say(
          `round ${round + 1} ${phase} ${service.name.toUpperCase()}: ${result.rps.toFixed(0)} transfers/s, ` +
            `mean ${result.meanMs.toFixed(3)} ms, API ${result.apiUs.toFixed(0)} µs, PostgreSQL ${result.pgUs.toFixed(0)} µs`,
        );
      }
    }
  }
  const median = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  process.stdout.write(`\nA = ${dirA}\nB = ${dirB}\n`);
  for (const phase of S.phases) {
    const a = results.a[phase];
    const b = results.b[phase];
    const figure = phase === 'c1' ? (r) => r.meanMs : (r) => r.rps;
    const unit = phase === 'c1' ? 'mean latency (ms)' : 'transfers/s';
    const ratios = a.map((r, i) => figure(b[i]) / figure(r));
    const side = (rs) =>
      `${median(rs.map(figure)).toFixed(phase === 'c1' ? 3 : 0)} (API ${median(rs.map((r) => r.apiUs)).toFixed(0)} µs, ` +
      `PostgreSQL ${median(rs.map((r) => r.pgUs)).toFixed(0)} µs per transfer)`;
    process.stdout.write(
      `${phase}, ${unit}: A ${side(a)} | B ${side(b)} | B ÷ A per round: median ${median(ratios).toFixed(3)} ` +
        `[${ratios.map((x) => x.toFixed(3)).join(' ')}]\n`,
    );
  }

  async function start(name, dir) {
    await admin.query(`CREATE DATABASE ab_${name}`);
    const serviceEnv = {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: dbUrl(`ab_${name}`),
      DATA_DIR: path.join(tmp, name),
      SIGNING_KEYS_FILE: path.join(tmp, `${name}-keys.json`),
      LOG_LEVEL: 'warn',
      QUEUE_PREFIX: `ab-${name}`,
      ACCESS_TOKEN_TTL_SECONDS: '3600',
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    };
    say(`${name.toUpperCase()}: migrations, key, application (${dir})…`);
    await run(process.execPath, [path.join(dir, 'dist/src/migrate.js')], { env: serviceEnv, cwd: dir });
    const cli = async (args) =>
      JSON.parse(
        (
          await run(process.execPath, [path.join(dir, 'dist/src/cli.js'), ...args], {
            env: serviceEnv,
            cwd: dir,
          })
        ).stdout || 'null',
      );
    await cli(['keys', 'rotate']);
    const key = newKeyPair();
    writeFileSync(path.join(tmp, `${name}.pub.pem`), key.publicPem);
    const app = await cli([
      'apps',
      'create',
      '--name',
      `ab-${name}`,
      '--public-key',
      path.join(tmp, `${name}.pub.pem`),
    ]);
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}/v1/`;
    const extra = Object.fromEntries(
      env(`AB_ENV_${name.toUpperCase()}`, '')
        .split(/\s+/)
        .filter(Boolean)
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    );
    const nodeArgs = env('AB_NODE_ARGS', '').split(/\s+/).filter(Boolean);
    const child = await startProcess(
      `API ${name}`,
      process.execPath,
      [...nodeArgs, path.join(dir, 'dist/src/main.js')],
      {
        env: { ...serviceEnv, ...extra, PORT: String(port), PUBLIC_BASE_URL: baseUrl },
        cwd: dir,
        logFile: path.join(tmp, `api-${name}.log`),
      },
    );
    const deadline = Date.now() + 60_000;
    while (
      !(await fetch(`${baseUrl}health/ready`)
        .then((r) => r.status === 200)
        .catch(() => false))
    ) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`API ${name} did not start`);
      await sleep(100);
    }
    const { token } = await accessToken(baseUrl, { appId: app.appId, keyId: app.keyId, key });
    say(`${name.toUpperCase()}: ${S.accounts} funded accounts…`);
    const accounts = await createFundedAccounts(baseUrl, token, app.appId, S.accounts, () => 1e6);
    return { name, baseUrl, token, accounts, pid: child.pid };
  }

  async function load(service, phase) {
    let refused = '';
    const pick = (exclude) => {
      for (;;) {
        const i = randomInt(service.accounts.length);
        if (i !== exclude) return i;
      }
    };
    const requests = [
      {
        method: 'POST',
        path: '/v1/wallet/transactions',
        headers: { Authorization: `Bearer ${service.token}`, 'Content-Type': 'application/json' },
        setupRequest: (request) => {
          const from = pick(-1);
          const to = pick(from);
          const amount = Number((1 + randomInt(900) / 100).toFixed(2));
          return { ...request, body: transferBody(service.accounts[from], service.accounts[to], amount) };
        },
        onResponse: (status, body) => {
          if ((status < 200 || status >= 300) && !refused)
            refused = `${status} ${String(body).slice(0, 300)}`;
        },
      },
    ];
    const options = {
      url: service.baseUrl.replace(/\/v1\/$/, ''),
      connections: phase === 'c1' ? 1 : 32,
      requests,
    };
    await autocannon({ ...options, duration: 2 });
    const api0 = cpuMicros(service.pid);
    const pg0 = serverCpuMicros(server.pid);
    const times = [];
    const result = await autocannon({
      ...options,
      duration: S.seconds,
      setupClient: (client) =>
        client.on('response', (status, _bytes, ms) => {
          if (status >= 200 && status < 300) times.push(ms);
        }),
    });
    const ok = result['2xx'];
    if (result.non2xx + result.errors + result.timeouts > 0)
      throw new Error(
        `${service.name}: ${result.non2xx} non-2xx, ${result.errors} errors; first: ${refused}`,
      );
    return {
      rps: ok / result.duration,
      meanMs: times.reduce((sum, ms) => sum + ms, 0) / times.length,
      apiUs: (cpuMicros(service.pid) - api0) / ok,
      pgUs: (serverCpuMicros(server.pid) - pg0) / ok,
    };
  }
}

function say(message) {
  process.stderr.write(`${message}\n`);
}
