// Starts what the suite needs, once: a real PostgreSQL (the embedded binaries
// in a temporary directory, or TEST_DATABASE_URL), a template database with
// every migration applied (each test file clones it), the dist build that the
// process-level tests spawn, and for `npm run test:redis` a private
// redis-server (or REDIS_URL). Runs outside Jest's module system, so it uses
// the compiled code in dist/: the same code production runs.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { buildIfNeeded, root } from '../../scripts/build-if-needed.mjs';
import { freePort } from './free-port.mjs';
import { sweepOrphanedTestServers, TEST_SERVER_PREFIX } from './orphaned-test-servers.mjs';

export const TEMPLATE_DB = 'wallet_template';

async function startRedis() {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  await new Promise((resolve, reject) => {
    let output = '';
    child.on('error', (error) =>
      reject(new Error(`cannot start redis-server (is it installed?): ${error.message}`)),
    );
    child.stdout.on('data', (chunk) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${output.slice(-500)}`)));
  });
  return { url: `redis://127.0.0.1:${port}`, process: child };
}

export default async function globalSetup() {
  buildIfNeeded();
  const { ensureEmbeddedPostgres } = await import(
    path.join(root, 'dist/src/common/database/embedded-postgres.js')
  );
  const { dataSourceOptions } = await import(path.join(root, 'dist/src/data-source.js'));

  let serverUrl;
  if (process.env.TEST_DATABASE_URL) {
    serverUrl = new URL(process.env.TEST_DATABASE_URL);
  } else {
    for (const dir of await sweepOrphanedTestServers())
      console.log(`stopped and removed the embedded PostgreSQL an earlier test run left in ${dir}`);
    const dir = mkdtempSync(path.join(os.tmpdir(), TEST_SERVER_PREFIX));
    chmodSync(dir, 0o755); // the server runs as the postgres user when we are root
    // In the runner's process group: an interrupted `npm test` takes its server down with it.
    const handle = await ensureEmbeddedPostgres({
      dataDir: dir,
      databaseName: 'postgres',
      ownProcessGroup: false,
    });
    globalThis.__EMBEDDED_PG__ = handle;
    globalThis.__EMBEDDED_PG_DIR__ = dir;
    serverUrl = new URL(handle.url);
  }

  const adminUrl = new URL(serverUrl);
  adminUrl.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: adminUrl.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  await admin.end();

  const templateUrl = new URL(serverUrl);
  templateUrl.pathname = `/${TEMPLATE_DB}`;
  const dataSource = new DataSource(dataSourceOptions(templateUrl.toString(), 2, 'wallet-test-template'));
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  await dataSource.destroy();

  process.env.TEST_PG_ADMIN_URL = adminUrl.toString();
  process.env.TEST_TEMPLATE_DB = TEMPLATE_DB;

  if (process.env.TEST_QUEUE_BACKEND === 'redis') {
    if (process.env.REDIS_URL) {
      process.env.TEST_REDIS_URL = process.env.REDIS_URL;
    } else {
      const redis = await startRedis();
      globalThis.__REDIS__ = redis.process;
      process.env.TEST_REDIS_URL = redis.url;
    }
  }
}
