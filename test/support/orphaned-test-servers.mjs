// The embedded servers that earlier test runs left behind. A run's server lives in the runner's process group, so
// an interrupted `npm test` takes it down; a runner killed alone (SIGKILL, an out-of-memory kill) leaves it running
// with nobody to stop it, and its temporary folder on disk. The next run's global setup stops and removes those:
// only folders of this harness (`wallet-test-pg-*`), only when no live process uses their server (the users'
// register of decision 0005), and only when neither the folder nor its register was touched in the last ten
// minutes (far longer than a join takes).
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from '../../scripts/build-if-needed.mjs';

export const TEST_SERVER_PREFIX = 'wallet-test-pg-';

/** A folder or users' register touched more recently than this may be a run between mkdtemp and its join. */
const JOIN_GRACE_MS = 10 * 60_000;

/**
 * Stops the orphaned servers of earlier runs found in `parent` (default: the system's temporary folder) and removes
 * their folders (and a relocated cluster's home). Answers the folders it removed. Never throws: a folder it cannot
 * handle is left as it is.
 */
export async function sweepOrphanedTestServers(parent = os.tmpdir(), now = Date.now()) {
  const dist = (file) => import(path.join(root, 'dist/src/common/database', file));
  const { EmbeddedServerUsers, USERS_DIR } = await dist('embedded-postgres-users.js');
  const { readPidFile, isServerAlive, waitUntil } = await dist('embedded-postgres-server.js');
  const { CLUSTER_POINTER } = await dist('embedded-postgres-placement.js');

  const names = await fs.readdir(parent).catch(() => []);
  const removed = [];
  for (const name of names.filter((entry) => entry.startsWith(TEST_SERVER_PREFIX))) {
    const dataDir = path.join(parent, name);
    try {
      const stat = await fs.lstat(dataDir);
      if (!stat.isDirectory() || (process.getuid && stat.uid !== process.getuid())) continue;
      // A run between its mkdtemp and the pid file of its join (the register's folder is made first, then its
      // lock is taken) has no live user yet: every folder touched in the last minutes is left alone.
      const register = await fs.stat(path.join(dataDir, USERS_DIR)).catch(() => undefined);
      const touched = Math.max(stat.mtimeMs, register?.mtimeMs ?? 0);
      if (now - touched < JOIN_GRACE_MS) continue;
      if (new EmbeddedServerUsers(dataDir).inUse()) continue;

      const relocatedCluster = (
        await fs.readFile(path.join(dataDir, CLUSTER_POINTER), 'utf8').catch(() => '')
      ).trim();
      const clusterDir = relocatedCluster || path.join(dataDir, 'postgres');
      const server = await readPidFile(clusterDir);
      if (server && isServerAlive(server, clusterDir)) {
        process.kill(server.pid, 'SIGQUIT'); // immediate shutdown: nothing of an earlier run is worth keeping
        if (!(await waitUntil(() => !isServerAlive(server, clusterDir), 10_000))) continue;
      }
      if (relocatedCluster) await fs.rm(path.dirname(relocatedCluster), { recursive: true, force: true });
      await fs.rm(dataDir, { recursive: true, force: true });
      removed.push(dataDir);
    } catch {
      // removed by another run meanwhile, or not ours to handle: left as it is
    }
  }
  return removed;
}
