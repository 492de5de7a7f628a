// Builds when the sources are newer than the build, then runs one entry point
// in this same process (so signals reach it directly).
// Usage: node scripts/start.mjs api|worker|cli|migrate [args…]
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entries = { api: 'main.js', worker: 'worker.js', cli: 'cli.js', migrate: 'migrate.js' };
const [, , role, ...rest] = process.argv;
if (!entries[role]) {
  process.stderr.write(`usage: node scripts/start.mjs ${Object.keys(entries).join('|')}\n`);
  process.exit(2);
}

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

const target = path.join(root, 'dist', 'src', entries[role]);
const stamp = path.join(root, 'dist', '.build-stamp');
const sources = Math.max(
  newestSource(path.join(root, 'src')),
  newestSource(path.join(root, 'migrations')),
  statSync(path.join(root, 'tsconfig.build.json')).mtimeMs,
);
if (!existsSync(target) || !existsSync(stamp) || statSync(stamp).mtimeMs < sources) {
  process.stderr.write('building…\n');
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], {
    stdio: ['ignore', 2, 2],
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
  spawnSync(process.execPath, ['-e', `require('fs').writeFileSync(${JSON.stringify(stamp)}, '')`]);
}
process.argv = [process.argv[0], target, ...rest];
await import(pathToFileURL(target).href);
