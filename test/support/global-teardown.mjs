import { rmSync } from 'node:fs';

export default async function globalTeardown() {
  globalThis.__REDIS__?.kill('SIGTERM');
  await globalThis.__EMBEDDED_PG__?.stop(10_000);
  if (globalThis.__EMBEDDED_PG_DIR__)
    rmSync(globalThis.__EMBEDDED_PG_DIR__, { recursive: true, force: true });
}
