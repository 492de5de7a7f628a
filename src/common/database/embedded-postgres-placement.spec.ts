import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CLUSTER_POINTER,
  EmbeddedPostgresError,
  firstBlockedFolder,
  placeCluster,
  reachableBinaries,
  type OsUser,
  type PostgresBinaries,
} from './embedded-postgres-placement.js';

/**
 * Where the embedded server's binaries and cluster go when the OS user that runs it cannot reach them
 * (decision 0023), on real folders. `other` stands for the postgres user as root sees it: a user that is
 * neither the owner of these folders nor in their group, so only the "others" bits apply to it, whoever runs
 * this test.
 */
describe('embedded PostgreSQL placement', () => {
  const other: OsUser = { name: 'someone-else', uid: 2_147_483_000, gid: 2_147_483_000 };
  const self: OsUser = { name: 'me', uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  let scratch: string;
  let runtimeDir: string;
  const log: string[] = [];

  const folder = (name: string, mode: number): string => {
    const dir = path.join(scratch, name);
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, mode);
    return dir;
  };

  beforeEach(() => {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'wallet-placement-'));
    chmodSync(scratch, 0o755);
    runtimeDir = path.join(scratch, 'runtime');
    log.length = 0;
  });

  afterEach(() => rmSync(scratch, { recursive: true, force: true }));

  describe('firstBlockedFolder', () => {
    it('names the first folder on the way that others may not pass through', async () => {
      const privateDir = folder('private', 0o700);
      mkdirSync(path.join(privateDir, 'inner'));
      expect(await firstBlockedFolder(other, path.join(privateDir, 'inner'))).toBe(privateDir);
      expect(await firstBlockedFolder(other, privateDir)).toBe(privateDir);
      expect(await firstBlockedFolder(self, path.join(privateDir, 'inner'))).toBeUndefined();
    });

    it('lets through search-only folders and folders that do not exist yet', async () => {
      const searchOnly = folder('search-only', 0o711);
      expect(await firstBlockedFolder(other, searchOnly)).toBeUndefined();
      expect(await firstBlockedFolder(other, path.join(searchOnly, 'not', 'yet'))).toBeUndefined();
    });

    it('uses the group bits for a member of the folder group', async () => {
      const groupOnly = folder('group-only', 0o710);
      const member: OsUser = { name: 'member', uid: 2_147_483_001, gid: statSync(groupOnly).gid };
      expect(await firstBlockedFolder(member, groupOnly)).toBeUndefined();
      expect(await firstBlockedFolder(other, groupOnly)).toBe(groupOnly);
    });

    it('resolves symbolic links: the real folders decide', async () => {
      const privateDir = folder('private', 0o700);
      mkdirSync(path.join(privateDir, 'target'));
      symlinkSync(path.join(privateDir, 'target'), path.join(scratch, 'link'));
      expect(await firstBlockedFolder(other, path.join(scratch, 'link'))).toBe(privateDir);
    });
  });

  describe('placeCluster', () => {
    it('keeps the cluster in DATA_DIR when not root, or when the server user can reach it', async () => {
      const dataDir = folder('private/data', 0o755);
      chmodSync(path.dirname(dataDir), 0o700);
      expect(await placeCluster(dataDir, undefined, runtimeDir, (line) => log.push(line))).toEqual({
        clusterDir: path.join(dataDir, 'postgres'),
        relocated: false,
      });
      const open = folder('open/data', 0o755);
      expect(await placeCluster(open, other, runtimeDir, (line) => log.push(line))).toEqual({
        clusterDir: path.join(open, 'postgres'),
        relocated: false,
      });
      expect(existsSync(path.join(dataDir, CLUSTER_POINTER))).toBe(false);
      expect(existsSync(path.join(open, CLUSTER_POINTER))).toBe(false);
      expect(existsSync(runtimeDir)).toBe(false);
    });

    it('moves an unreachable DATA_DIR cluster to a 0755 home in the runtime folder, recorded in a pointer', async () => {
      const privateDir = folder('private', 0o700);
      const dataDir = folder('private/data', 0o755);
      const placed = await placeCluster(dataDir, other, runtimeDir, (line) => log.push(line));
      expect(placed.relocated).toBe(true);
      expect(placed.clusterDir).toMatch(
        new RegExp(`^${runtimeDir.replace(/[.]/g, '\\.')}/clusters/data-[0-9a-f]{16}/postgres$`),
      );
      expect(readFileSync(path.join(dataDir, CLUSTER_POINTER), 'utf8')).toBe(`${placed.clusterDir}\n`);
      const home = path.dirname(placed.clusterDir);
      for (const dir of [runtimeDir, path.dirname(home), home])
        expect(statSync(dir).mode & 0o777).toBe(0o755);
      expect(readFileSync(path.join(home, 'DATA_DIR'), 'utf8')).toBe(`${dataDir}\n`);
      expect(await firstBlockedFolder(other, home)).toBeUndefined();
      expect(log).toEqual([
        `keeping the PostgreSQL cluster of ${dataDir} in ${placed.clusterDir} (user someone-else cannot reach ${privateDir})`,
      ]);

      // Every later start finds the same cluster through the pointer, even once DATA_DIR became reachable.
      chmodSync(privateDir, 0o755);
      expect(await placeCluster(dataDir, other, runtimeDir, () => undefined)).toEqual(placed);
      expect(await placeCluster(dataDir, undefined, runtimeDir, () => undefined)).toEqual(placed);
    });

    it('gives a DATA_DIR made anew at the same path a new cluster, and keeps and names the earlier ones', async () => {
      folder('private', 0o700);
      const dataDir = folder('private/data', 0o755);
      const first = await placeCluster(dataDir, other, runtimeDir, () => undefined);
      // The first cluster was initialised; then DATA_DIR was removed and made again (its pointer gone with it).
      mkdirSync(first.clusterDir, { recursive: true });
      writeFileSync(path.join(first.clusterDir, 'PG_VERSION'), '18\n');
      rmSync(dataDir, { recursive: true });
      mkdirSync(dataDir, { mode: 0o755 });

      const second = await placeCluster(dataDir, other, runtimeDir, () => undefined);
      const newHome = `${path.dirname(first.clusterDir)}-2`;
      expect(second).toEqual({
        clusterDir: `${newHome}/postgres`,
        relocated: true,
        earlierClusters: [path.dirname(first.clusterDir)],
      });
      expect(readFileSync(path.join(dataDir, CLUSTER_POINTER), 'utf8')).toBe(`${second.clusterDir}\n`);
      expect(readFileSync(path.join(first.clusterDir, 'PG_VERSION'), 'utf8')).toBe('18\n');

      // Later starts follow the pointer and name nothing; a home without an initialised cluster (a start that
      // stopped before initdb) is reused when the pointer is gone.
      const later = { clusterDir: second.clusterDir, relocated: true };
      expect(await placeCluster(dataDir, other, runtimeDir, () => undefined)).toEqual(later);
      rmSync(path.join(dataDir, CLUSTER_POINTER));
      expect(await placeCluster(dataDir, other, runtimeDir, () => undefined)).toEqual(second);
    });

    it('never replaces an initialised cluster the server user cannot reach: one line naming folder, user and fix', async () => {
      const privateDir = folder('private', 0o700);
      const dataDir = folder('private/data', 0o755);
      mkdirSync(path.join(dataDir, 'postgres'));
      writeFileSync(path.join(dataDir, 'postgres', 'PG_VERSION'), '18\n');
      const error = await placeCluster(dataDir, other, runtimeDir, () => undefined).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EmbeddedPostgresError);
      expect((error as Error).message).toBe(
        `embedded PostgreSQL: the cluster in ${dataDir}/postgres cannot be reached by the OS user someone-else (the server cannot run as root) because someone-else cannot pass through ${privateDir}: let it pass (chmod o+x ${privateDir}), run the service as another user, or set DATABASE_URL`,
      );
      expect(existsSync(path.join(dataDir, CLUSTER_POINTER))).toBe(false);
    });

    it('refuses a pointer that does not hold an absolute path', async () => {
      const dataDir = folder('data', 0o755);
      writeFileSync(path.join(dataDir, CLUSTER_POINTER), 'somewhere/postgres\n');
      await expect(placeCluster(dataDir, other, runtimeDir, () => undefined)).rejects.toThrow(
        `embedded PostgreSQL: ${dataDir}/${CLUSTER_POINTER} does not hold an absolute path: write the cluster's folder into it, or remove it to start a new cluster`,
      );
    });
  });

  describe('reachableBinaries', () => {
    /** A stand-in for the package's native/ folder (bin/initdb, bin/postgres, lib/, share/) under `parent`. */
    const fakeBinaries = (parent: string): PostgresBinaries => {
      const dir = path.join(parent, 'native');
      for (const sub of ['bin', 'lib/postgresql', 'share/postgresql'])
        mkdirSync(path.join(dir, sub), { recursive: true });
      for (const name of ['initdb', 'postgres']) {
        writeFileSync(path.join(dir, 'bin', name), `#!/bin/sh\necho ${name}\n`, { mode: 0o755 });
        chmodSync(path.join(dir, 'bin', name), 0o755);
      }
      writeFileSync(path.join(dir, 'lib', 'libpq.so.5.18'), 'library');
      symlinkSync('libpq.so.5.18', path.join(dir, 'lib', 'libpq.so.5'));
      return {
        dir,
        initdb: path.join(dir, 'bin', 'initdb'),
        postgres: path.join(dir, 'bin', 'postgres'),
        version: '18.4.0-test',
      };
    };

    it('uses the binaries in place when the server user can reach them', async () => {
      const source = fakeBinaries(folder('open', 0o755));
      expect(await reachableBinaries(other, source, runtimeDir, (line) => log.push(line))).toBe(source);
      expect(existsSync(runtimeDir)).toBe(false);
    });

    it('places a linked (or copied) tree in the runtime folder once, and reuses it', async () => {
      const source = fakeBinaries(folder('private', 0o700));
      const placed = await reachableBinaries(other, source, runtimeDir, (line) => log.push(line));
      const expectedDir = path.join(
        runtimeDir,
        'embedded-postgres',
        `18.4.0-test-${process.platform}-${process.arch}`,
      );
      expect(placed).toEqual({
        dir: expectedDir,
        initdb: path.join(expectedDir, 'bin', 'initdb'),
        postgres: path.join(expectedDir, 'bin', 'postgres'),
        version: '18.4.0-test',
      });
      expect(readFileSync(placed.postgres, 'utf8')).toBe('#!/bin/sh\necho postgres\n');
      expect(statSync(placed.postgres).mode & 0o777).toBe(0o755);
      expect(readFileSync(path.join(expectedDir, 'lib', 'libpq.so.5'), 'utf8')).toBe('library');
      expect(statSync(expectedDir).mode & 0o777).toBe(0o755);
      expect(await firstBlockedFolder(other, path.join(expectedDir, 'bin'))).toBeUndefined();
      expect(log).toHaveLength(1);

      const again = await reachableBinaries(other, source, runtimeDir, (line) => log.push(line));
      expect(again).toEqual(placed);
      expect(log).toHaveLength(1); // nothing placed the second time
    });

    it('fails with one line naming the folder, the user and the fix when the runtime folder cannot be made', async () => {
      const privateDir = folder('private', 0o700);
      const source = fakeBinaries(privateDir);
      const notAFolder = path.join(scratch, 'file');
      writeFileSync(notAFolder, '');
      await expect(
        reachableBinaries(other, source, path.join(notAFolder, 'runtime'), () => undefined),
      ).rejects.toThrow(
        new EmbeddedPostgresError(
          `embedded PostgreSQL: running as root, the server runs as the OS user someone-else, which cannot reach ${privateDir}, and ${notAFolder}/runtime could not be prepared for it (ENOTDIR): run the service as another user, move the checkout to a folder someone-else can pass through, or set DATABASE_URL`,
        ),
      );
    });
  });
});
