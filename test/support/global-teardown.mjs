import { rmSync } from 'node:fs';
import path from 'node:path';

export default async function globalTeardown() {
  globalThis.__REDIS__?.kill('SIGTERM');
  const handle = globalThis.__EMBEDDED_PG__;
  await handle?.stop(10_000);
  // As root with a temporary folder the postgres user cannot reach, the cluster was kept outside it (decision 0023).
  if (handle?.relocated) rmSync(path.dirname(handle.clusterDir), { recursive: true, force: true });
  if (globalThis.__EMBEDDED_PG_DIR__)
    rmSync(globalThis.__EMBEDDED_PG_DIR__, { recursive: true, force: true });
}
