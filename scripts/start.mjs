// Builds when the sources are newer than the build, then runs one entry point
// in this same process (so signals reach it directly).
// Usage: node scripts/start.mjs api|worker|cli|migrate [args…]
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildIfNeeded, root } from './build-if-needed.mjs';

const entries = { api: 'main.js', worker: 'worker.js', cli: 'cli.js', migrate: 'migrate.js' };
const [, , role, ...rest] = process.argv;
if (!entries[role]) {
  process.stderr.write(`usage: node scripts/start.mjs ${Object.keys(entries).join('|')}\n`);
  process.exit(2);
}
buildIfNeeded();
const target = path.join(root, 'dist', 'src', entries[role]);
process.argv = [process.argv[0], target, ...rest];
await import(pathToFileURL(target).href);
