import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { VerifiedTokenCache } from '#common/auth/verified-token-cache.js';
import { loadConfig } from '#config/app-config.js';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { SigningKeysService } from './signing-keys.service.js';

/** A SIGNING_KEYS_FILE the service cannot use stops the start with a message that names it and leaks no key. */
describe('SigningKeysService with a file it cannot use', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'wallet-keys-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const start = async (file: string) => {
    const config = loadConfig({ NODE_ENV: 'production', SIGNING_KEYS_FILE: file, DATA_DIR: dir });
    const service = new SigningKeysService(config, new VerifiedTokenCache(config));
    // As the API's start does (AuthModule): load the file, then ask for the key that signs.
    return service
      .onModuleInit()
      .then(() => service.current())
      .then(
        () => undefined,
        (error: unknown) => error as Error,
      );
  };

  it('a file that is not JSON: "not valid JSON", without the text around the fault (it holds private keys)', async () => {
    const file = path.join(dir, 'keys.json');
    const secret = 'q3VHsG2vbUpmCnWDpD2uMVlAmU7fWjbl8Y0I0vN_private';
    // A value pasted without its quotes: V8's message quotes the text around it, the key's first characters.
    writeFileSync(file, `{"keys":[{"kid":"k1","privateJwk":{"kty":"EC","d":${secret}}}]}`);
    const error = await start(file);
    expect(error?.message).toBe(`SIGNING_KEYS_FILE ${file} is not valid JSON`);
    expect(error?.cause).toBeUndefined();
    expect(JSON.stringify({ message: error?.message, stack: error?.stack })).not.toContain(
      secret.slice(0, 12),
    );
  });

  it('JSON that is not a key file, or no file at all: says which and what to do', async () => {
    const file = path.join(dir, 'other.json');
    writeFileSync(file, '[1, 2]');
    expect((await start(file))?.message).toBe(
      `SIGNING_KEYS_FILE ${file} is not a signing key file (no "keys" list)`,
    );
    writeFileSync(file, 'null');
    expect((await start(file))?.message).toBe(
      `SIGNING_KEYS_FILE ${file} is not a signing key file (no "keys" list)`,
    );
    const missing = path.join(dir, 'missing.json');
    expect((await start(missing))?.message).toBe(
      `SIGNING_KEYS_FILE ${missing} does not exist (create it with: npm run --silent cli -- keys rotate)`,
    );
  });
});

/** Two processes on one key file (the API's processes, the CLI): each sees what another wrote. */
describe('SigningKeysService across processes sharing a key file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'wallet-keys-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const startProcess = async (env: Record<string, string> = {}) => {
    const config = loadConfig({ NODE_ENV: 'test', DATA_DIR: dir, ...env });
    const service = new SigningKeysService(config, new VerifiedTokenCache(config));
    await service.onModuleInit();
    return service;
  };

  it('a kid it has not loaded makes it read the file at once: a token of a key another process added verifies without waiting for the periodic check', async () => {
    const rotating = await startProcess({ SIGNING_KEY_ACTIVATION_SECONDS: '0' });
    const verifying = await startProcess();
    const first = await verifying.current(); // loaded just now: the once-a-second check would not look again
    const { kid } = await rotating.rotate();
    expect((await rotating.current()).kid).toBe(kid);
    const key = await verifying.publicKey(kid);
    expect(key?.export({ format: 'jwk' })).toEqual(
      (await rotating.publicKey(kid))?.export({ format: 'jwk' }),
    );
    expect((await verifying.publicKey(first.kid))?.type).toBe('public');
    // A kid that is in no file stays unknown.
    expect(await verifying.publicKey('no-such-kid')).toBeUndefined();
  });

  it('a rotated key is published at once but signs only from its signsFrom; the old key signs until then', async () => {
    // 5 s: long enough for the checks made before the new key signs, on a loaded machine.
    const rotating = await startProcess({ SIGNING_KEY_ACTIVATION_SECONDS: '5' });
    const other = await startProcess();
    const old = await rotating.current();
    expect(old.signsFrom).toBe(old.createdAt); // a first key signs at once

    const before = Date.now();
    const rotated = await rotating.rotate();
    expect(Date.parse(rotated.signsFrom) - before).toBeGreaterThanOrEqual(5000);
    expect(Date.parse(rotated.signsFrom) - Date.now()).toBeLessThanOrEqual(5000);
    expect(rotated.published).toEqual([old.kid, rotated.kid]);
    // The other process sees the file within a second, or at once when a token names the new kid.
    for (const service of [rotating, other]) {
      expect(await service.publicKey(rotated.kid)).toBeDefined();
      expect((await service.jwks()).keys.map((key) => key.kid)).toEqual([old.kid, rotated.kid]);
      expect((await service.current()).kid).toBe(old.kid);
    }
    // Neither the key that signs nor the one about to sign can be retired.
    await expect(rotating.retire(old.kid)).rejects.toBeInstanceOf(ValidationFailedError);
    await expect(rotating.retire(rotated.kid)).rejects.toBeInstanceOf(ValidationFailedError);

    await new Promise((resolve) => setTimeout(resolve, Date.parse(rotated.signsFrom) - Date.now() + 20));
    for (const service of [rotating, other]) {
      expect((await service.current()).kid).toBe(rotated.kid);
      expect((await service.jwks()).keys.map((key) => key.kid)).toEqual([old.kid, rotated.kid]);
    }
    await expect(rotating.retire(rotated.kid)).rejects.toBeInstanceOf(ValidationFailedError);
    await expect(rotating.retire(old.kid)).resolves.toEqual({ kid: old.kid, retiredAt: expect.any(String) });
  });

  it('derived keys (decision 0077): the same in every process of the file, one per purpose, following rotate and retire; a recheck finds a key another process added', async () => {
    const rotating = await startProcess({ SIGNING_KEY_ACTIVATION_SECONDS: '0' });
    const other = await startProcess();
    const purpose = 'wallet statement cursor v1';
    const first = await rotating.derivedKeys(purpose);
    expect(await other.derivedKeys(purpose)).toStrictEqual(first);
    expect(first.signing).toHaveLength(32);
    expect(first.published).toStrictEqual([first.signing]);
    const elsewhere = await rotating.derivedKeys('another purpose');
    expect(elsewhere.signing.equals(first.signing)).toBe(false);
    // Not the private scalar itself.
    const file = JSON.parse(readFileSync(rotating['config'].signingKeysFile, 'utf8')) as {
      keys: { privateJwk: { d: string } }[];
    };
    expect(first.signing.equals(Buffer.from(file.keys[0].privateJwk.d, 'base64url'))).toBe(false);

    const { kid } = await rotating.rotate();
    const rotated = await rotating.derivedKeys(purpose);
    expect(rotated.published).toStrictEqual([rotated.signing, first.signing]);
    expect(rotated.signing.equals(first.signing)).toBe(false);
    // Several purposes from one reading of the file: the n-th key of each is of the same signing key.
    const [ofPurpose, ofAnother] = await rotating.derivedKeySets([purpose, 'another purpose']);
    expect(ofPurpose).toStrictEqual(rotated);
    expect(ofAnother).toStrictEqual(await rotating.derivedKeys('another purpose'));
    expect(ofAnother.published).toHaveLength(2);
    // A recheck looks at the file at once, whenever the other process read it last.
    expect(await other.derivedKeys(purpose, true)).toStrictEqual(rotated);

    const old = (await rotating.jwks()).keys.find((key) => key.kid !== kid)?.kid ?? '';
    await rotating.retire(old);
    expect(await rotating.derivedKeys(purpose)).toStrictEqual({
      signing: rotated.signing,
      published: [rotated.signing],
    });
  });

  it('a key file written before signsFrom existed: its newest key signs', async () => {
    const service = await startProcess();
    const file = service['config'].signingKeysFile;
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { keys: Record<string, unknown>[] };
    const { kid } = await service.rotate();
    const legacy = JSON.parse(readFileSync(file, 'utf8')) as { keys: Record<string, unknown>[] };
    for (const key of legacy.keys) delete key.signsFrom;
    writeFileSync(file, JSON.stringify(legacy));
    const reader = await startProcess();
    expect(stored.keys).toHaveLength(1);
    expect((await reader.current()).kid).toBe(kid);
  });
});
