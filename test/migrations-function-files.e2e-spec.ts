import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { DataSource, type Logger } from 'typeorm';
import { MIGRATIONS } from '../migrations/index.js';
import { functionDefinitions, functionFiles, loadFunction, sha256Of } from '../migrations/sql.js';
import { dataSourceOptions } from '../src/data-source.js';
import { createEmptyDatabase } from './support/database.js';
import { childEnv, ROOT } from './support/processes.js';

/** Where each file's function is created to be compared with the one the migrations left in `public`. */
const SCRATCH = 'function_files_scratch';
/** The first line of what loadFunction returns (migrations/sql.ts). */
const LOAD_MARKER = /^-- loadFunction (\w+) sha256:(\S+)$/m;

interface Pin {
  name: string;
  sha256: string;
  migration: string;
}

/**
 * The database functions' files (src/modules/<module>/sql/*.sql, one function each) against a database that the
 * migrations built from nothing: every function has its file and every file its function, and each file,
 * created in a scratch schema, gives exactly the live definition (pg_get_functiondef: arguments, result,
 * language, volatility, settings and body). So the files are what runs, and cannot drift from the migrations.
 * A migration that loads a file pins its hash; the last pin of each file must be the file's text now, else an
 * edit has no migration to carry it to databases (a fresh one would not get it either: an outdated pin installs
 * nothing).
 */
describe('database function files', () => {
  let database: { url: string; drop: () => Promise<void> };
  let db: pg.Client;
  const files = functionFiles();
  const pins: Pin[] = [];
  /** The hash of a function file's text now. */
  const hashOf = (name: string) =>
    sha256Of(readFileSync(files.find((file) => file.name === name)!.file, 'utf8'));

  beforeAll(async () => {
    database = await createEmptyDatabase();
    // The migrations run here with a logger that keeps what loadFunction handed them, and which migration did.
    let pending: Omit<Pin, 'migration'>[] = [];
    const record: Logger = {
      logQuery(query, parameters) {
        const marker = LOAD_MARKER.exec(query);
        if (marker) pending.push({ name: marker[1], sha256: marker[2] });
        if (query.startsWith('INSERT INTO "schema_migrations"') && Array.isArray(parameters)) {
          pins.push(...pending.map((pin) => ({ ...pin, migration: String(parameters[1]) })));
          pending = [];
        }
      },
      logQueryError: () => undefined,
      logQuerySlow: () => undefined,
      logSchemaBuild: () => undefined,
      logMigration: () => undefined,
      log: () => undefined,
    };
    const dataSource = new DataSource({
      ...dataSourceOptions(database.url, 2, 'function-files'),
      logger: record,
    });
    await dataSource.initialize();
    try {
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await dataSource.destroy();
    }
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await database?.drop();
  });

  /** Every function of a schema (not an extension's), by name, as pg_get_functiondef gives it. */
  const definitions = (schema: string): Promise<Record<string, string>> =>
    functionDefinitions(async (sql, params) => (await db.query(sql, params)).rows, schema);

  it('has one file for every function of the migrated database, and a function for every file', async () => {
    const names = files.map((file) => file.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual(Object.keys(await definitions('public')).sort());
  });

  it('opens every file with a header comment, then creates the one function the file is named for', () => {
    const malformed = files.filter(({ name, file }) => {
      const text = readFileSync(file, 'utf8');
      const creates = text.match(/^CREATE (OR REPLACE )?FUNCTION /gm) ?? [];
      return (
        !/^(-- .*\n)+CREATE OR REPLACE FUNCTION /.test(text) ||
        creates.length !== 1 ||
        !text.includes(`\nCREATE OR REPLACE FUNCTION public.${name}(`)
      );
    });
    expect(malformed.map((file) => path.relative(ROOT, file.file))).toEqual([]);
  });

  it('defines in every file exactly the function the migrations installed', async () => {
    await db.query(`CREATE SCHEMA ${SCRATCH}`);
    for (const { name } of files) {
      // What a migration would run (loadFunction), created beside the live one instead of replacing it.
      const sql = loadFunction(name, hashOf(name)).replace(
        `CREATE OR REPLACE FUNCTION public.${name}(`,
        `CREATE OR REPLACE FUNCTION ${SCRATCH}.${name}(`,
      );
      await db.query(sql);
    }
    const fromFiles = await definitions(SCRATCH);
    const normalised = Object.fromEntries(
      Object.entries(fromFiles).map(([name, definition]) => [
        name,
        definition.replace(`FUNCTION ${SCRATCH}.${name}(`, `FUNCTION public.${name}(`),
      ]),
    );
    expect(normalised).toEqual(await definitions('public'));
  });

  it('reads the same files from the build (dist/) as from the sources', () => {
    const loader = pathToFileURL(path.join(ROOT, 'dist/migrations/sql.js')).href;
    const output = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        // The sources' hashes as pins: a file of dist/ that differs is not loaded.
        `const { functionFiles, loadFunction } = await import(${JSON.stringify(loader)});
         const pins = JSON.parse(process.argv[1]);
         const texts = Object.fromEntries(functionFiles().map(({ name }) => [name, loadFunction(name, pins[name] ?? '')]));
         process.stdout.write(JSON.stringify(texts));`,
        JSON.stringify(Object.fromEntries(files.map(({ name }) => [name, hashOf(name)]))),
      ],
      { cwd: ROOT, env: childEnv({}), encoding: 'utf8' },
    );
    const fromSources = Object.fromEntries(files.map(({ name }) => [name, loadFunction(name, hashOf(name))]));
    expect(JSON.parse(output)).toEqual(fromSources);
  });

  it("pins, in the last migration that loads a file, the file's text as it is now", () => {
    // The marker this test reads is the one loadFunction writes.
    expect(LOAD_MARKER.exec(loadFunction('wallet_round', 'abc123'))?.slice(1)).toEqual([
      'wallet_round',
      'abc123',
    ]);
    const last = new Map(pins.map((pin) => [pin.name, pin]));
    // A pin of a removed file is the past of a function a later migration dropped.
    const stale = [...last.values()]
      .filter((pin) => files.some((file) => file.name === pin.name))
      .map((pin) => ({ ...pin, now: hashOf(pin.name) }))
      .filter((pin) => pin.sha256 !== pin.now)
      .map(
        (pin) =>
          `${pin.name}.sql changed after ${pin.migration} loaded it: add a migration that runs ` +
          `loadFunction('${pin.name}', '${pin.now}')`,
      );
    expect(pins.every((pin) => MIGRATIONS.some((migration) => new migration().name === pin.migration))).toBe(
      true,
    );
    expect(stale).toEqual([]);
  });
});
