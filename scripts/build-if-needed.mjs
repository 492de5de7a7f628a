// Compiles src/ and migrations/ to dist/ when any source is newer than the last build.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
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
  writeFileSync(stamp, '');
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildIfNeeded();
