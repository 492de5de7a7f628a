import { createPublicKey, hkdfSync, type KeyObject } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
} from 'jose';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { VerifiedTokenCache } from '#common/auth/verified-token-cache.js';

interface StoredKey {
  kid: string;
  createdAt: string;
  /** When it starts signing (published from createdAt); absent in files written before it existed: createdAt. */
  signsFrom?: string;
  retiredAt: string | null;
  privateJwk: JWK;
}

interface KeyFile {
  keys: StoredKey[];
}

/** How often one unknown kid may make a process read the key file again (a token can name any kid). */
const UNKNOWN_KID_RECHECK_MS = 100;
/** Unknown kids remembered for that bound; beyond it the list starts again (random kids only cost a stat). */
const UNKNOWN_KIDS_REMEMBERED = 1000;

export interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
  readonly publicKeyObject: KeyObject;
  readonly createdAt: string;
  readonly signsFrom: string;
  readonly retiredAt: string | null;
}

/** Symmetric keys derived from the signing keys for one purpose (SigningKeysService.derivedKeys). */
export interface DerivedKeys {
  /** The signing key's: to make a new MAC. */
  readonly signing: Buffer;
  /** Every published key's, the signing key's first: to check a MAC made before a rotation. */
  readonly published: readonly Buffer[];
}

/**
 * The service's ES256 signing keys (access tokens, webhooks; and the MAC keys
 * derived from them, for statement cursors), kept in a JWK set
 * file: SIGNING_KEYS_FILE in production (must exist), generated once under
 * DATA_DIR/keys in development. Every key not retired is published in the JWKS;
 * the newest of them whose signsFrom has come signs, so a rotated key is
 * published SIGNING_KEY_ACTIVATION_SECONDS before it is used. Every process
 * (API, worker, CLI) re-reads the file when it changes, so `keys rotate` reaches
 * them all.
 */
@Injectable()
export class SigningKeysService implements OnModuleInit {
  private keys: SigningKey[] = [];
  private fileVersion = '';
  private lastCheck = 0;
  /** The file check that an unknown kid started, shared by every request that waits for it. */
  private checking: Promise<void> | undefined;
  private readonly unknownKidChecks = new Map<string, number>();
  /** Each loaded key's private scalar (the JWK's `d`), by kid: the input of derivedKeys. Never logged. */
  private secrets = new Map<string, Buffer>();
  /** derivedKeys' results by kid and purpose, dropped with the keys they came from. */
  private derived = new Map<string, Buffer>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly verified: VerifiedTokenCache,
  ) {}

  async onModuleInit(): Promise<void> {
    if (await this.ensureFile()) await this.refresh('force');
  }

  /** The key that signs now. */
  async current(): Promise<SigningKey> {
    await this.refresh();
    const key = signingKeyOf(this.keys, Date.now());
    if (!key) throw new Error(`no active signing key in ${this.config.signingKeysFile}`);
    return key;
  }

  /**
   * A published (not retired) key by kid, for verifying access tokens. A kid this process has not loaded makes it
   * look at the file at once, not at the next periodic check: another process may have just added the key and be
   * signing with it already.
   */
  async publicKey(kid: string): Promise<KeyObject | undefined> {
    await this.refresh();
    if (!this.keys.some((key) => key.kid === kid)) await this.checkForUnknownKid(kid);
    return this.keys.find((key) => key.kid === kid && key.retiredAt === null)?.publicKeyObject;
  }

  /**
   * Keys for a MAC of the service's own (e.g. a statement's cursor), derived with HKDF-SHA256 from each published
   * key's private key, `purpose` as HKDF's info: every process that shares the key file derives the same ones,
   * with no setting of their own, they follow `keys rotate` and `keys retire`, and a key of one purpose tells
   * nothing of another's or of the ES256 key. `recheck`: look at the file at once, bounded as for an unknown kid,
   * for a MAC that no loaded key made (another process may have just started signing with a new key).
   */
  async derivedKeys(purpose: string, recheck = false): Promise<DerivedKeys> {
    return (await this.derivedKeySets([purpose], recheck))[0];
  }

  /**
   * derivedKeys for several purposes from one reading of the key file, in their order: the n-th key of each comes
   * from the same signing key, so keys of one signing key go together (a cursor's MAC key and its cipher key). Two
   * calls of derivedKeys could read the file between them, across a `keys rotate`.
   */
  async derivedKeySets(purposes: readonly string[], recheck = false): Promise<DerivedKeys[]> {
    if (recheck) await this.checkForUnknownKid(`derived:${purposes.join('|')}`);
    const signing = await this.current();
    const others = this.keys.filter((key) => key.retiredAt === null && key !== signing);
    return purposes.map((purpose) => ({
      signing: this.derive(signing.kid, purpose),
      published: [signing, ...others].map((key) => this.derive(key.kid, purpose)),
    }));
  }

  private derive(kid: string, purpose: string): Buffer {
    const name = `${kid}:${purpose}`;
    let key = this.derived.get(name);
    if (!key) {
      const secret = this.secrets.get(kid);
      if (!secret) throw new Error(`signing key ${kid} has no private part`);
      key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), purpose, 32));
      this.derived.set(name, key);
    }
    return key;
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    await this.refresh();
    return {
      keys: this.keys
        .filter((key) => key.retiredAt === null)
        .map((key) => ({ ...key.publicJwk, kid: key.kid, alg: 'ES256', use: 'sig' })),
    };
  }

  /**
   * Every key of the file, the retired ones too, oldest first; none while the file does not exist (production
   * before the first `keys rotate`). Never creates the file.
   */
  async history(): Promise<{ kid: string; retiredAt: string | null }[]> {
    const exists = await fs.access(this.config.signingKeysFile).then(
      () => true,
      () => false,
    );
    if (!exists) return [];
    return (await this.readFile()).keys.map(({ kid, retiredAt }) => ({ kid, retiredAt }));
  }

  /**
   * Adds a new key, published at once; it signs from signsFrom, SIGNING_KEY_ACTIVATION_SECONDS from now (at once
   * when no other key is published), and the key that signed until then keeps signing meanwhile.
   */
  async rotate(): Promise<{ kid: string; signsFrom: string; published: string[] }> {
    const file = (await this.ensureFile()) ? await this.readFile() : { keys: [] };
    const delayMs = file.keys.some((k) => k.retiredAt === null)
      ? this.config.signingKeyActivationSeconds * 1000
      : 0;
    const fresh = await generateStoredKey(delayMs);
    file.keys.push(fresh);
    await this.writeFile(file);
    await this.refresh('force');
    return {
      kid: fresh.kid,
      signsFrom: fresh.signsFrom ?? fresh.createdAt,
      published: file.keys.filter((k) => k.retiredAt === null).map((k) => k.kid),
    };
  }

  /**
   * Stops publishing a key (tokens it signed stop verifying). Neither the key that signs now nor the newest key
   * (which signs, or will when its signsFrom comes) can be retired.
   */
  async retire(kid: string): Promise<{ kid: string; retiredAt: string }> {
    const file = await this.readFile();
    const active = file.keys.filter((k) => k.retiredAt === null);
    const target = active.find((k) => k.kid === kid);
    if (!target) throw new NotFoundError(kid, 'No published signing key with that kid');
    if (signingKeyOf(file.keys, Date.now()) === target) {
      throw ValidationFailedError.single(
        'keyId',
        'invalid',
        'the current signing key cannot be retired; rotate first',
      );
    }
    if (active[active.length - 1] === target) {
      throw ValidationFailedError.single(
        'keyId',
        'invalid',
        `the newest key starts signing at ${target.signsFrom ?? target.createdAt} and cannot be retired; rotate first`,
      );
    }
    target.retiredAt = new Date().toISOString();
    await this.writeFile(file);
    await this.refresh('force');
    return { kid, retiredAt: target.retiredAt };
  }

  /**
   * Makes sure the key file exists: generated in development; in production
   * (SIGNING_KEYS_FILE) it is never invented here, and false is returned so
   * that `keys rotate` can create it while anything that signs fails.
   */
  private async ensureFile(): Promise<boolean> {
    const file = this.config.signingKeysFile;
    try {
      await fs.access(file);
      return true;
    } catch {
      if (this.config.signingKeysFileExplicit) return false;
    }
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const initial: KeyFile = { keys: [await generateStoredKey(0)] };
    // 'wx': when two processes start at once, the first file wins and the other reads it.
    await fs.writeFile(file, JSON.stringify(initial, null, 2), { mode: 0o600, flag: 'wx' }).catch((error) => {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    });
    return true;
  }

  private async readFile(): Promise<KeyFile> {
    let text: string;
    try {
      text = await fs.readFile(this.config.signingKeysFile, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new Error(
          `SIGNING_KEYS_FILE ${this.config.signingKeysFile} does not exist (create it with: npm run --silent cli -- keys rotate)`,
          { cause: error },
        );
      }
      throw error;
    }
    let parsed: KeyFile;
    try {
      parsed = JSON.parse(text) as KeyFile;
    } catch {
      // Not JSON.parse's message, nor as a cause: it quotes the text around the fault, which holds private keys.
      throw new Error(`SIGNING_KEYS_FILE ${this.config.signingKeysFile} is not valid JSON`);
    }
    if (!Array.isArray(parsed?.keys))
      throw new Error(
        `SIGNING_KEYS_FILE ${this.config.signingKeysFile} is not a signing key file (no "keys" list)`,
      );
    return parsed;
  }

  private async writeFile(file: KeyFile): Promise<void> {
    const target = this.config.signingKeysFile;
    await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    const temporary = `${target}.${process.pid}.tmp`;
    await fs.writeFile(temporary, JSON.stringify(file, null, 2), { mode: 0o600 });
    await fs.rename(temporary, target);
  }

  /**
   * Bounded, since a token names any kid it likes: one check of the file at a time (a request that finds one
   * under way waits for it), at most one per kid every UNKNOWN_KID_RECHECK_MS, and the file is read only when it
   * changed (otherwise the check is a stat).
   */
  private async checkForUnknownKid(kid: string): Promise<void> {
    const now = Date.now();
    const last = this.unknownKidChecks.get(kid);
    if (last !== undefined && now - last < UNKNOWN_KID_RECHECK_MS) return;
    if (this.unknownKidChecks.size >= UNKNOWN_KIDS_REMEMBERED) this.unknownKidChecks.clear();
    this.unknownKidChecks.set(kid, now);
    this.checking ??= this.refresh('now').finally(() => {
      this.checking = undefined;
    });
    await this.checking;
  }

  /**
   * 'periodic': at most once a second, and the file is read only when it changed; 'now': the same without the
   * once-a-second bound; 'force': read it in any case.
   */
  private async refresh(mode: 'periodic' | 'now' | 'force' = 'periodic'): Promise<void> {
    const now = Date.now();
    if (mode === 'periodic' && now - this.lastCheck < 1000) return;
    this.lastCheck = now;
    const stat = await fs.stat(this.config.signingKeysFile).catch(() => undefined);
    if (!stat) {
      await this.readFile(); // throws the explanatory error
      return;
    }
    // The file is replaced by a rename: a new inode, even when two writes share an mtime.
    const version = `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
    if (mode !== 'force' && version === this.fileVersion) return;
    const file = await this.readFile();
    const loaded: SigningKey[] = [];
    const secrets = new Map<string, Buffer>();
    for (const stored of file.keys) {
      if (typeof stored.privateJwk.d === 'string') {
        secrets.set(stored.kid, Buffer.from(stored.privateJwk.d, 'base64url'));
      }
      const { d: _d, ...publicJwk } = stored.privateJwk;
      if (stored.privateJwk.kty !== 'EC' || stored.privateJwk.crv !== 'P-256') {
        throw new Error(`signing key ${stored.kid} is not an EC P-256 key`);
      }
      loaded.push({
        kid: stored.kid,
        privateKey: (await importJWK(stored.privateJwk, 'ES256')) as CryptoKey,
        publicJwk,
        publicKeyObject: createPublicKey({
          key: publicJwk as import('node:crypto').JsonWebKey,
          format: 'jwk',
        }),
        createdAt: stored.createdAt,
        signsFrom: stored.signsFrom ?? stored.createdAt,
        retiredAt: stored.retiredAt,
      });
    }
    this.keys = loaded;
    this.secrets = secrets;
    this.derived = new Map();
    this.fileVersion = version;
    this.verified.clear(); // a retired key's tokens stop working as soon as this process sees the change
  }
}

/**
 * The key that signs at `now`: the newest published one whose signsFrom has come. If none has (a clock behind
 * the one that wrote the file), the oldest published one.
 */
function signingKeyOf<K extends { createdAt: string; signsFrom?: string; retiredAt: string | null }>(
  keys: readonly K[],
  now: number,
): K | undefined {
  const published = keys.filter((key) => key.retiredAt === null);
  return published.findLast((key) => Date.parse(key.signsFrom ?? key.createdAt) <= now) ?? published[0];
}

/** A new key that starts signing `delayMs` after its creation. */
async function generateStoredKey(delayMs: number): Promise<StoredKey> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(
    { kty: 'EC', crv: privateJwk.crv, x: privateJwk.x, y: privateJwk.y },
    'sha256',
  );
  const createdAt = Date.now();
  return {
    kid,
    createdAt: new Date(createdAt).toISOString(),
    signsFrom: new Date(createdAt + delayMs).toISOString(),
    retiredAt: null,
    privateJwk,
  };
}
