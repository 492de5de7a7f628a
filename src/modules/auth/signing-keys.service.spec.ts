import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { VerifiedTokenCache } from '#common/auth/verified-token-cache.js';
import { loadConfig } from '#config/app-config.js';
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
});
