import { createHash, type JsonWebKey, type KeyObject } from 'node:crypto';
import { ValidationFailedError, type ValidationItem } from '#common/errors/domain-errors.js';
import { freshKeyPair } from '../../../test/support/keys.js';
import { KEY_ID_PATTERN, keyObjectFromJwk, parsePublicKey } from './public-key.js';

const ecKeyPair = () => freshKeyPair('P-256');

const pem = (key: KeyObject) => key.export({ type: 'spki', format: 'pem' }) as string;
const jwkText = (key: KeyObject) => JSON.stringify(key.export({ format: 'jwk' }));

/** RFC 7638 by hand: SHA-256 over the required members in lexicographic order, no whitespace. */
function thumbprint(jwk: JsonWebKey): string {
  const canonical = `{"crv":"${jwk.crv}","kty":"${jwk.kty}","x":"${jwk.x}","y":"${jwk.y}"}`;
  return createHash('sha256').update(canonical, 'utf8').digest('base64url');
}

/** The items of the ValidationFailedError that parsePublicKey rejects with. */
async function refusal(text: string, path?: string): Promise<ValidationItem[]> {
  const error: unknown = await parsePublicKey(text, path).then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ValidationFailedError);
  return (error as ValidationFailedError).items;
}

describe('parsePublicKey', () => {
  const { publicKey, privateKey } = ecKeyPair();
  const exported = publicKey.export({ format: 'jwk' });

  it('gives the same keyId and jwk for the PEM (SPKI) and the JWK form of one key', async () => {
    const fromPem = await parsePublicKey(pem(publicKey));
    const fromJwk = await parsePublicKey(jwkText(publicKey));
    expect(fromPem.keyId).toBe(fromJwk.keyId);
    expect(fromPem.jwk).toEqual(fromJwk.jwk);
  });

  it('uses the RFC 7638 SHA-256 thumbprint as the keyId', async () => {
    const parsed = await parsePublicKey(pem(publicKey));
    expect(parsed.keyId).toBe(thumbprint(exported));
    expect(parsed.keyId).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(parsed.keyId).toMatch(KEY_ID_PATTERN); // a key lookup skips any other kid (decision 0057)
  });

  it('returns only the public members kty, crv, x and y', async () => {
    const parsed = await parsePublicKey(
      JSON.stringify({ ...exported, kid: 'mine', use: 'sig', alg: 'ES256', key_ops: ['verify'] }),
    );
    expect(parsed.jwk).toEqual({ kty: 'EC', crv: 'P-256', x: exported.x, y: exported.y });
    expect(Object.keys(parsed.jwk).sort()).toEqual(['crv', 'kty', 'x', 'y']);
    expect(parsed.keyId).toBe(thumbprint(exported));
  });

  it('accepts surrounding whitespace', async () => {
    const parsed = await parsePublicKey(`\n  ${pem(publicKey)}  \n`);
    expect(parsed.keyId).toBe(thumbprint(exported));
  });

  it('gives different keys different keyIds', async () => {
    const other = ecKeyPair().publicKey;
    expect((await parsePublicKey(pem(other))).keyId).not.toBe((await parsePublicKey(pem(publicKey))).keyId);
  });

  it('returns a jwk that round-trips to the same public key', async () => {
    const parsed = await parsePublicKey(pem(publicKey));
    expect(keyObjectFromJwk(parsed.jwk).equals(publicKey)).toBe(true);
  });

  describe('refusals, each at path publicKey', () => {
    const privateMessage = 'a private key was given: register the public key only';
    const notAKey = 'not a PEM (SPKI) or JWK public key';
    const notP256 = 'the key must be an EC P-256 key (ES256)';

    it.each([
      [
        'a private PEM (PKCS#8)',
        () => privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        privateMessage,
      ],
      [
        'a private PEM (SEC1)',
        () => privateKey.export({ type: 'sec1', format: 'pem' }) as string,
        privateMessage,
      ],
      ['a private JWK (has d)', () => JSON.stringify(privateKey.export({ format: 'jwk' })), privateMessage],
      ['an RSA public key', () => freshKeyPair('rsa-2048').publicPem, notP256],
      ['an RSA public JWK', () => jwkText(freshKeyPair('rsa-2048').publicKey), notP256],
      ['a P-384 public key', () => freshKeyPair('P-384').publicPem, notP256],
      ['a P-384 public JWK', () => jwkText(freshKeyPair('P-384').publicKey), notP256],
      ['an Ed25519 public key', () => freshKeyPair('ed25519').publicPem, notP256],
      ['an Ed25519 public JWK', () => jwkText(freshKeyPair('ed25519').publicKey), notP256],
      ['garbage', () => 'not a key at all', notAKey],
      ['an empty string', () => '', notAKey],
      ['broken JSON', () => '{"kty":"EC",', notAKey],
      ['a truncated PEM', () => pem(publicKey).slice(0, 80), notAKey],
      ['a JWK with a wrong x', () => JSON.stringify({ ...exported, x: 'AAAA' }), notAKey],
    ])('refuses %s', async (_label, text, message) => {
      await expect(refusal(text())).resolves.toEqual([{ path: 'publicKey', message, type: 'invalid' }]);
    });

    it('reports at the path it is given', async () => {
      await expect(refusal('garbage', 'keys[1].publicKey')).resolves.toEqual([
        { path: 'keys[1].publicKey', message: notAKey, type: 'invalid' },
      ]);
    });
  });
});
