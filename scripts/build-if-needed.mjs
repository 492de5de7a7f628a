// Compiles src/ and migrations/ to dist/ when any source is newer than the last build, and copies the database
// functions' .sql files (src/modules/*/sql/, read by migrations/sql.ts) beside the compiled code.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The newest mtime of the sources under `dir`: .ts and .sql files, and folders (a file removed or renamed). */
function newestSource(dir) {
  let newest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (entry.name.endsWith('.ts') || entry.name.endsWith('.sql')) {
      newest = Math.max(newest, statSync(full).mtimeMs);
    }
  }
  return newest;
}

/** The .sql files under `dir` (relative paths). */
function sqlFiles(dir, base = dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sqlFiles(full, base);
    return entry.name.endsWith('.sql') ? [path.relative(base, full)] : [];
  });
}

/** dist/src holds exactly the .sql files of src (tsc copies only what it compiles). */
function copySqlFiles() {
  const from = path.join(root, 'src');
  const to = path.join(root, 'dist', 'src');
  for (const stale of sqlFiles(to)) rmSync(path.join(to, stale));
  for (const file of sqlFiles(from)) {
    mkdirSync(path.dirname(path.join(to, file)), { recursive: true });
    copyFileSync(path.join(from, file), path.join(to, file));
  }
}

/** Returns true when it built, false when the build was current; exits the process on a compile error. */
export function buildIfNeeded() {
  const stamp = path.join(root, 'dist', '.build-stamp');
  const sources = Math.max(
    newestSource(path.join(root, 'src')),
    newestSource(path.join(root, 'migrations')),
    statSync(path.join(root, 'tsconfig.build.json')).mtimeMs,
    statSync(path.join(root, 'tsconfig.json')).mtimeMs,
  );
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= sources) return false;
  process.stderr.write('building…\n');
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], {
    stdio: ['ignore', 2, 2],
  });
  if (result.status !== 0) {
    process.stderr.write('build failed\n');
    process.exit(result.status ?? 1);
  }
  copySqlFiles();
  writeFileSync(stamp, '');
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildIfNeeded();
