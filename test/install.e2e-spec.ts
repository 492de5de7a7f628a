import { readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';

/**
 * What a fresh machine's `npm install` needs from the committed lockfile (docs/decisions/0025): every
 * platform's optional binaries listed (else a cold install rewrites the lockfile and `npm ci` refuses it),
 * every package's declared engine met by the Node the README promises, and every required peer met.
 * `.ci/run` proves the same from a cold cache; this suite names the package when it breaks.
 */
interface LockEntry {
  version?: string;
  engines?: { node?: string } | string[];
  optional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  link?: boolean;
}

const root = path.resolve(import.meta.dirname, '..');
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  engines: { node: string };
  overrides?: Record<string, string | Record<string, string>>;
};
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
};

/** Where Node would resolve `name` from the package installed at `from` (a lockfile key). */
function resolveFrom(from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (!dir) return undefined;
    const at = dir.lastIndexOf('/node_modules/');
    dir = at === -1 ? '' : dir.slice(0, at);
  }
}

const installed = Object.entries(lock.packages).filter(([key, entry]) => key !== '' && !entry.link);

describe('the committed lockfile (fresh machine install)', () => {
  it('is a lockfile v3 with packages', () => {
    expect(lock.lockfileVersion).toBe(3);
    expect(installed.length).toBeGreaterThan(500);
  });

  it("lists every platform's optional binaries, not only this machine's", () => {
    const missing: string[] = [];
    let optionalSeen = 0;
    for (const [key, entry] of installed) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        optionalSeen += 1;
        if (!resolveFrom(key, name)) missing.push(`${key} → ${name}`);
      }
    }
    // msgpackr-extract (BullMQ) and unrs-resolver (jest) ship per-platform binaries: both must be there whole.
    expect(lock.packages['node_modules/@msgpackr-extract/msgpackr-extract-darwin-arm64']).toBeDefined();
    expect(lock.packages['node_modules/@unrs/resolver-binding-win32-x64-msvc']).toBeDefined();
    expect(optionalSeen).toBeGreaterThan(20);
    expect(missing).toEqual([]);
  });

  it('needs no newer Node than the README promises (no EBADENGINE)', () => {
    const promised = semver.minVersion(manifest.engines.node);
    expect(promised?.version).toBe('20.19.0');
    const refused = installed
      .filter(([, entry]) => {
        const node = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
        return node !== undefined && !semver.satisfies(promised!.version, node);
      })
      .map(
        ([key, entry]) => `${key}@${entry.version} needs node ${(entry.engines as { node: string }).node}`,
      );
    expect(refused).toEqual([]);
  });

  it('meets every required peer, except those an override in package.json points elsewhere (no ERESOLVE)', () => {
    const overridden = (name: string, peer: string): boolean => {
      const rule = manifest.overrides?.[name];
      return typeof rule === 'object' && peer in rule;
    };
    const unmet: string[] = [];
    for (const [key, entry] of installed) {
      const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
      for (const [peer, range] of Object.entries(entry.peerDependencies ?? {})) {
        if (entry.peerDependenciesMeta?.[peer]?.optional) continue;
        const at = resolveFrom(key, peer);
        const version = at ? lock.packages[at].version : undefined;
        if (version && semver.satisfies(version, range, { includePrerelease: true })) continue;
        if (overridden(name, peer)) continue;
        unmet.push(`${key} wants ${peer}@${range}, has ${version ?? 'none'}`);
      }
    }
    expect(unmet).toEqual([]);
  });
});
