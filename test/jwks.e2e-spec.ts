import { calculateJwkThumbprint, createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWK } from 'jose';
import request from 'supertest';
import { NotFoundError, ValidationFailedError } from '../src/common/errors/domain-errors.js';
import { SigningKeysService } from '../src/modules/auth/signing-keys.service.js';
import { accessToken, registerClient, type TestClient } from './support/auth.js';
import { FixtureModule } from './support/fixture.module.js';
import { startTestApp, TEST_BASE_URL, type TestApp } from './support/test-app.js';

/** A published key: a public JWK that always carries its kid. */
type PublishedKey = JWK & { kid: string };

interface Jwks {
  keys: PublishedKey[];
}

describe('GET /v1/.well-known/jwks.json and signing key rotation', () => {
  let t: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    // A rotated key signs 5 s after it is published (120 s by default): long enough for the checks made before
    // then on a loaded machine.
    t = await startTestApp({ extraModules: [FixtureModule], env: { SIGNING_KEY_ACTIVATION_SECONDS: '5' } });
    client = await registerClient(t.app);
  });
  afterAll(() => t.close());

  const fetchJwks = async (): Promise<Jwks> => {
    const response = await request(t.http).get('/v1/.well-known/jwks.json');
    expect(response.status).toBe(200);
    return response.body as Jwks;
  };
  const kidOf = (token: string) => decodeProtectedHeader(token).kid;
  const ccOnly = (token: string) =>
    request(t.http).get('/v1/test-fixtures/cc-only').set('Authorization', `Bearer ${token}`);
  const verifyWith = (token: string, jwks: Jwks) =>
    jwtVerify(token, createLocalJWKSet(jwks), {
      algorithms: ['ES256'],
      issuer: TEST_BASE_URL,
      audience: TEST_BASE_URL,
      typ: 'at+jwt',
    });

  it('is public and publishes one EC P-256 signing key without private material', async () => {
    const response = await request(t.http).get('/v1/.well-known/jwks.json');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.headers['cache-control']).toBe('public, max-age=60');
    expect(response.body).toStrictEqual({
      keys: [
        {
          kty: 'EC',
          crv: 'P-256',
          x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
          y: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
          kid: expect.any(String),
          alg: 'ES256',
          use: 'sig',
        },
      ],
    });
    expect(response.body.keys[0]).not.toHaveProperty('d');
    expect(response.text).not.toContain('"d"');
  });

  it('ignores credentials, even invalid ones', async () => {
    const response = await request(t.http)
      .get('/v1/.well-known/jwks.json')
      .set('Authorization', 'Bearer not-a-token');
    expect(response.status).toBe(200);
    expect((response.body as Jwks).keys).toHaveLength(1);
  });

  it('names each key by its RFC 7638 thumbprint', async () => {
    const [key] = (await fetchJwks()).keys;
    const thumbprint = await calculateJwkThumbprint(
      { kty: key.kty, crv: key.crv, x: key.x, y: key.y },
      'sha256',
    );
    expect(key.kid).toBe(thumbprint);
    expect(key.kid).toBe((await t.app.get(SigningKeysService).current()).kid);
  });

  it('verifies an access token with jose against the published set (ES256 only)', async () => {
    const jwks = await fetchJwks();
    const token = await accessToken(t.http, client);
    expect(kidOf(token)).toBe(jwks.keys[0].kid);
    const { payload, protectedHeader } = await verifyWith(token, jwks);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'at+jwt', kid: jwks.keys[0].kid });
    expect(payload).toMatchObject({ sub: client.appId, client_id: client.appId, token_use: 'access' });
  });

  it('rotates: both keys published at once, the new one signs from its signsFrom, old tokens keep working; retire stops the old', async () => {
    const keys = t.app.get(SigningKeysService);
    const [oldKey] = (await fetchJwks()).keys;
    const oldToken = await accessToken(t.http, client);
    expect(kidOf(oldToken)).toBe(oldKey.kid);

    const rotated = await keys.rotate();
    expect(rotated.kid).not.toBe(oldKey.kid);
    expect(rotated.published).toEqual([oldKey.kid, rotated.kid]);
    expect(Date.parse(rotated.signsFrom)).toBeGreaterThan(Date.now());

    const afterRotation = await fetchJwks();
    expect(afterRotation.keys.map((key) => key.kid)).toEqual([oldKey.kid, rotated.kid]);
    for (const key of afterRotation.keys) {
      expect(key).not.toHaveProperty('d');
      expect(key.kid).toBe(await calculateJwkThumbprint(key, 'sha256'));
    }

    // A token issued before the rotation still authenticates.
    const before = await ccOnly(oldToken);
    expect(before.status).toBe(200);
    expect(before.body).toStrictEqual({ kind: 'client', appId: client.appId });

    // Until its signsFrom the old key signs; neither key can be retired meanwhile.
    expect(kidOf(await accessToken(t.http, client))).toBe(oldKey.kid);
    await expect(keys.retire(oldKey.kid)).rejects.toBeInstanceOf(ValidationFailedError);
    await new Promise((resolve) => setTimeout(resolve, Date.parse(rotated.signsFrom) - Date.now() + 20));

    // Then a new token is signed with the new key, verifies against the set, and authenticates.
    const newToken = await accessToken(t.http, client);
    expect(kidOf(newToken)).toBe(rotated.kid);
    await expect(verifyWith(newToken, afterRotation)).resolves.toBeDefined();
    await expect(verifyWith(oldToken, afterRotation)).resolves.toBeDefined();
    expect((await ccOnly(newToken)).status).toBe(200);

    // The current key cannot be retired.
    await expect(keys.retire(rotated.kid)).rejects.toBeInstanceOf(ValidationFailedError);
    expect((await fetchJwks()).keys).toHaveLength(2);

    // Retiring the old key unpublishes it and its tokens stop authenticating.
    const retired = await keys.retire(oldKey.kid);
    expect(retired).toEqual({ kid: oldKey.kid, retiredAt: expect.any(String) });
    const afterRetire = await fetchJwks();
    expect(afterRetire.keys.map((key) => key.kid)).toEqual([rotated.kid]);
    const refused = await ccOnly(oldToken);
    expect(refused.status).toBe(401);
    expect(refused.body).toStrictEqual({ name: 'UnauthorizedError', message: expect.any(String) });
    await expect(verifyWith(oldToken, afterRetire)).rejects.toThrow();
    expect((await ccOnly(newToken)).status).toBe(200);

    // A retired or unknown key cannot be retired (again).
    await expect(keys.retire(oldKey.kid)).rejects.toBeInstanceOf(NotFoundError);
    await expect(keys.retire('no-such-kid')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('refuses to retire the only key', async () => {
    const keys = t.app.get(SigningKeysService);
    const { keys: published } = await fetchJwks();
    expect(published).toHaveLength(1);
    await expect(keys.retire(published[0].kid)).rejects.toBeInstanceOf(ValidationFailedError);
    expect((await fetchJwks()).keys.map((key) => key.kid)).toEqual([published[0].kid]);
  });
});
