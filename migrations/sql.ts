import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The database functions' definitions, one `.sql` file each in `src/modules/<module>/sql/`: a migration that
 * changes a function loads its file instead of pasting a copy (src/modules/transfers/sql/README.md).
 *
 * Read at run time relative to this file: from the repository under ts-jest (`migrations/` beside `src/`),
 * and from `dist/` when built (`scripts/build-if-needed.mjs` copies the `.sql` files beside the compiled code,
 * `dist/migrations/` beside `dist/src/`).
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MODULES = path.join(ROOT, 'src', 'modules');

/** Every function file: its function's name and its path. */
export function functionFiles(): { name: string; file: string }[] {
  const files: { name: string; file: string }[] = [];
  for (const module of readdirSync(MODULES).sort()) {
    const folder = path.join(MODULES, module, 'sql');
    if (!existsSync(folder)) continue;
    for (const entry of readdirSync(folder).sort()) {
      if (entry.endsWith('.sql')) files.push({ name: entry.slice(0, -4), file: path.join(folder, entry) });
    }
  }
  return files;
}

/** The SHA-256 (hex) of a function file's text, as a migration that loads it pins it. */
export function sha256Of(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The `CREATE OR REPLACE FUNCTION` of `name` for `queryRunner.query`, when its file still holds the text the
 * migration was written for (`sha256`, the file's hash then). When the file has changed since (or was removed
 * with its function), a later migration carries that change, so this one installs nothing (the returned
 * statement does nothing): a fresh database never runs a definition in a schema older than the one it was
 * written for, and a migrated database got this one when the migration ran.
 * test/migrations-function-files.e2e-spec.ts fails while the last migration that loads a file pins another
 * text, naming the hash to pin. The returned text starts with a comment naming the function and the pin.
 */
export function loadFunction(name: string, sha256: string): string {
  const found = functionFiles().find((entry) => entry.name === name);
  const text = found ? readFileSync(found.file, 'utf8') : undefined;
  if (text === undefined || sha256Of(text) !== sha256) {
    return `${loadMarker(name, sha256)}\n-- changed or removed since: a later migration carries it\nSELECT 1`;
  }
  return `${loadMarker(name, sha256)}\n${text}`;
}

/** The first line of what loadFunction returns: which function, pinned at which hash. */
export function loadMarker(name: string, sha256: string): string {
  return `-- loadFunction ${name} sha256:${sha256}`;
}

/**
 * Every function of `schema` (not an extension's), by name, as PostgreSQL prints it (`pg_get_functiondef`: a
 * `CREATE OR REPLACE FUNCTION` that runs as it is). `query` answers rows (a QueryRunner's `query`, or a pg
 * client's wrapped). One function per name: an overloaded name throws.
 */
export async function functionDefinitions(
  query: (sql: string, params: unknown[]) => Promise<unknown>,
  schema = 'public',
): Promise<Record<string, string>> {
  const rows = (await query(
    `SELECT p.proname AS name, pg_get_functiondef(p.oid) AS definition
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
      ORDER BY p.proname, p.oid`,
    [schema],
  )) as { name: string; definition: string }[];
  const byName: Record<string, string> = {};
  for (const row of rows) {
    if (row.name in byName) throw new Error(`${schema}.${row.name} is overloaded: one function per name`);
    byName[row.name] = row.definition;
  }
  return byName;
}

/**
 * For a migration's `down`: the `CREATE OR REPLACE FUNCTION` that gives `name` back as it was before the
 * migration, from its live definition and the migration's `changes` (each [the text it installed, the text it
 * replaced], as PostgreSQL prints them). Throws when the live function is not the one the migration installed.
 */
export async function functionBefore(
  query: (sql: string, params: unknown[]) => Promise<unknown>,
  name: string,
  changes: readonly (readonly [string, string])[],
): Promise<string> {
  let live = (await functionDefinitions(query))[name];
  for (const [installed, replaced] of changes) {
    if (live === undefined || !live.includes(installed))
      throw new Error(`${name} is not the one this migration installed`);
    live = live.replace(installed, replaced);
  }
  return live;
}

/**
 * For a migration's `up` that indexes a table growing with traffic (transfers, events, audit records, messages,
 * documents): `CREATE [UNIQUE] INDEX CONCURRENTLY`, which lets the table's writers go on while it builds (a plain
 * CREATE INDEX blocks every insert and update of the table until it ends: every transfer, on the outbox or the
 * audit trail). CONCURRENTLY cannot run in a transaction: the migration sets `transaction = false`, and each of
 * its statements must be safe to run again, since a failure leaves the earlier ones done and the migration
 * unrecorded. So an index already there and valid is kept, and one an interrupted build left invalid is dropped
 * and built again. `definition` is what follows the index's name: `ON "table" (…) [WHERE …]`.
 * (A `down` runs in the transaction TypeORM's undo opens: it uses plain DROP and CREATE INDEX.)
 */
export async function createIndexConcurrently(
  query: (sql: string, params?: unknown[]) => Promise<unknown>,
  name: string,
  definition: string,
  { unique = false }: { unique?: boolean } = {},
): Promise<void> {
  const [existing] = (await query(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`,
    [name],
  )) as { valid: boolean }[];
  if (existing?.valid) return;
  // A build on a large table takes minutes: the session's statement timeout (DB_STATEMENT_TIMEOUT_MS, 15 s by
  // default, which the migration's connection has too) would cancel it and leave an invalid index that every
  // write keeps up to date and no read uses. No limit for the build; the session's own afterwards.
  await query(`SET statement_timeout = 0`);
  try {
    if (existing) await query(`DROP INDEX CONCURRENTLY "${name}"`);
    await query(`CREATE ${unique ? 'UNIQUE ' : ''}INDEX CONCURRENTLY "${name}" ${definition}`);
  } finally {
    await query(`RESET statement_timeout`);
  }
}
