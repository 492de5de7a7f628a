import { createHmac } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import request from 'supertest';
import type { Job } from 'bullmq';
import { JOBS } from '../src/common/queue/queue-names.js';
import { AppsService } from '../src/modules/apps/apps.service.js';
import { PruneUsedAssertionsProcessor } from '../src/modules/auth/prune-used-assertions.processor.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import {
  clientAssertion,
  handSignedJwt,
  newKeyPair,
  registerClient,
  unsignedJwt,
  type TestClient,
} from './support/auth.js';
import { startTestApp, TEST_BASE_URL, type TestApp } from './support/test-app.js';

describe('POST /v1/oauth/app/token', () => {
  let t: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    t = await startTestApp();
    client = await registerClient(t.app);
  });
  afterAll(() => t.close());

  const exchange = (body: Record<string, unknown>) => request(t.http).post('/v1/oauth/app/token').send(body);
  const withAssertion = async (token: string, overrides: Record<string, unknown> = {}) =>
    exchange({ appId: client.appId, token, grantType: 'client_credentials', ...overrides });

  const expectRefused = (response: request.Response, status = 401) => {
    expect(response.status).toBe(status);
    expect(response.body).toEqual({
      errorId: status === 401 ? 'invalid_client' : expect.any(String),
      code: status,
      message: expect.any(String),
      ...(status === 400 ? { detail: expect.any(Array) } : {}),
    });
  };

  it('issues an ES256 access token for a valid assertion', async () => {
    const response = await withAssertion(await clientAssertion(client));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ type: 'Bearer', accessToken: expect.any(String), expiresIn: 900 });
    const header = decodeProtectedHeader(response.body.accessToken);
    expect(header).toMatchObject({ alg: 'ES256', typ: 'at+jwt', kid: expect.any(String) });
    const claims = decodeJwt(response.body.accessToken);
    expect(claims).toMatchObject({
      iss: TEST_BASE_URL,
      aud: TEST_BASE_URL,
      sub: client.appId,
      client_id: client.appId,
      app_key: client.keyId,
    });
    expect((claims.exp as number) - (claims.iat as number)).toBe(900);
  });

  it('accepts the alternative audience {base_url}oauth/app/token', async () => {
    const token = await clientAssertion(client, { claims: { aud: `${TEST_BASE_URL}oauth/app/token` } });
    expect((await withAssertion(token)).status).toBe(200);
  });

  it('refuses an unknown application', async () => {
    const other = { ...client, appId: '6f1c1d7e-4a1b-4c4e-9f8a-2b1c3d4e5f60' };
    const response = await exchange({
      appId: other.appId,
      token: await clientAssertion(other),
      grantType: 'client_credentials',
    });
    expectRefused(response);
  });

  it('refuses an unknown kid', async () => {
    expectRefused(
      await withAssertion(await clientAssertion(client, { header: { kid: 'not-a-registered-key' } })),
    );
  });

  it('refuses a revoked key', async () => {
    const second = newKeyPair();
    const added = await t.app.get(AppsService).addKey(client.appId, second.publicPem, cliActor('test'));
    const viaSecond = { ...client, keyId: added.keyId, key: second };
    expect((await withAssertion(await clientAssertion(viaSecond))).status).toBe(200);
    await t.app.get(AppsService).revokeKey(client.appId, added.keyId, cliActor('test'));
    expectRefused(await withAssertion(await clientAssertion(viaSecond)));
  });

  it("ends the access tokens a key obtained when the key is revoked (within AUTH_CACHE_MS), not the other keys'", async () => {
    const second = newKeyPair();
    const added = await t.app.get(AppsService).addKey(client.appId, second.publicPem, cliActor('test'));
    const viaSecond = { ...client, keyId: added.keyId, key: second };
    const tokenOf = async (via: TestClient) =>
      ((await withAssertion(await clientAssertion(via))).body as { accessToken: string }).accessToken;
    const [bySecond, byFirst] = [await tokenOf(viaSecond), await tokenOf(client)];
    const list = (accessToken: string) =>
      request(t.http).get('/v1/users/all').set('Authorization', `Bearer ${accessToken}`);
    expect([(await list(bySecond)).status, (await list(byFirst)).status]).toEqual([200, 200]);
    await t.app.get(AppsService).revokeKey(client.appId, added.keyId, cliActor('test'));
    await new Promise((resolve) => setTimeout(resolve, t.config.authCacheMs + 100));
    expect([(await list(bySecond)).status, (await list(byFirst)).status]).toEqual([401, 200]);
  });

  it('refuses an expired assertion', async () => {
    const iat = Math.floor(Date.now() / 1000) - 7200;
    expectRefused(await withAssertion(await clientAssertion(client, { iat, lifetimeSeconds: 3600 })));
  });

  it('refuses a lifetime over 3600 seconds', async () => {
    expectRefused(await withAssertion(await clientAssertion(client, { lifetimeSeconds: 3601 })));
  });

  it('accepts the issuer {base_url} as audience (draft-ietf-oauth-rfc7523bis, what standard clients send)', async () => {
    const token = await clientAssertion(client, { claims: { aud: TEST_BASE_URL } });
    const response = await withAssertion(token);
    expect(response.status).toBe(200);
    expect(response.body).toStrictEqual({ type: 'Bearer', accessToken: expect.any(String), expiresIn: 900 });
  });

  it('refuses a wrong audience', async () => {
    expectRefused(
      await withAssertion(await clientAssertion(client, { claims: { aud: `${TEST_BASE_URL}users` } })),
    );
    expectRefused(
      await withAssertion(
        await clientAssertion(client, { claims: { aud: TEST_BASE_URL.replace(/\/$/, '') } }),
      ),
    );
    expectRefused(
      await withAssertion(
        await clientAssertion(client, { claims: { aud: 'https://elsewhere.example/v1/oauth/token' } }),
      ),
    );
  });

  it('refuses an aud array, even one naming an accepted audience, with the body of any other wrong aud', async () => {
    const wrong = await withAssertion(
      await clientAssertion(client, { claims: { aud: 'https://elsewhere.example/v1/oauth/token' } }),
    );
    expectRefused(wrong);
    for (const aud of [
      [`${TEST_BASE_URL}oauth/token`, 'https://other-as.example/token'],
      ['https://other-as.example/token', TEST_BASE_URL],
      [`${TEST_BASE_URL}oauth/token`],
    ]) {
      const response = await withAssertion(await clientAssertion(client, { claims: { aud } }));
      expect({ status: response.status, body: response.body }).toEqual({
        status: wrong.status,
        body: wrong.body,
      });
    }
  });

  it('refuses iss or sub other than the appId', async () => {
    expectRefused(await withAssertion(await clientAssertion(client, { claims: { sub: 'someone-else' } })));
    expectRefused(await withAssertion(await clientAssertion(client, { claims: { iss: 'someone-else' } })));
  });

  it('refuses an iat in the future', async () => {
    const iat = Math.floor(Date.now() / 1000) + 600;
    expectRefused(await withAssertion(await clientAssertion(client, { iat, lifetimeSeconds: 600 })));
  });

  it('refuses a tampered signature', async () => {
    const token = await clientAssertion(client);
    const [header, payload, signature] = token.split('.');
    const flipped = signature.slice(0, -2) + (signature.endsWith('AA') ? 'BB' : 'AA');
    expectRefused(await withAssertion(`${header}.${payload}.${flipped}`));
    const otherPayload = Buffer.from(JSON.stringify({ ...decodeJwt(token), exp: 9999999999 })).toString(
      'base64url',
    );
    expectRefused(await withAssertion(`${header}.${otherPayload}.${signature}`));
  });

  it('refuses an assertion signed by another key under the registered kid', async () => {
    expectRefused(
      await withAssertion(await clientAssertion(client, { privateKey: newKeyPair().privateKey })),
    );
  });

  it('refuses alg none', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = unsignedJwt(
      { alg: 'none', kid: client.keyId },
      { iss: client.appId, sub: client.appId, aud: `${TEST_BASE_URL}oauth/token`, iat: now, exp: now + 600 },
    );
    expectRefused(await withAssertion(token));
  });

  it('refuses HS256 signed with the public key as the secret', async () => {
    const now = Math.floor(Date.now() / 1000);
    const unsigned = unsignedJwt(
      { alg: 'HS256', kid: client.keyId },
      { iss: client.appId, sub: client.appId, aud: `${TEST_BASE_URL}oauth/token`, iat: now, exp: now + 600 },
    ).slice(0, -1);
    const signature = createHmac('sha256', client.key.publicPem).update(unsigned).digest('base64url');
    expectRefused(await withAssertion(`${unsigned}.${signature}`));
  });

  it('refuses a replayed assertion that carries a jti', async () => {
    const token = await clientAssertion(client, { claims: { jti: 'one-time-id' } });
    expect((await withAssertion(token)).status).toBe(200);
    expectRefused(await withAssertion(token));
  });

  it('refuses a jti that is not a string, so it cannot turn replay protection off', async () => {
    for (const jti of [12345, true, null, { id: 'x' }, ['x']]) {
      // jose types jti as a string; a client may sign any JSON.
      const claims = { jti } as unknown as JWTPayload;
      const response = await withAssertion(await clientAssertion(client, { claims }));
      expectRefused(response);
      expect(response.body.message).toBe('the assertion jti must be a string');
    }
  });

  it('refuses a jti with a NUL or another control character, or a lone surrogate (401, not 500 or a collision)', async () => {
    const kept = async () =>
      ((await t.dataSource.query('SELECT count(*)::int AS n FROM used_assertions')) as { n: number }[])[0].n;
    const before = await kept();
    for (const jti of [
      'nul\u0000here',
      'bell\u0007',
      'line\nbreak',
      'del\u007f',
      'c1\u0085',
      'x\ud800',
      'x\udbff',
      '\udc00x',
    ]) {
      const response = await withAssertion(await clientAssertion(client, { claims: { jti } }));
      expectRefused(response);
      expect(response.body.message).toBe(
        'the assertion jti must be well-formed text without control characters',
      );
    }
    expect(await kept()).toBe(before);
    // Other text still works once, a surrogate pair and a no-break space included.
    const fine = await clientAssertion(client, { claims: { jti: 'ünïcode 😀 \u00a0 id' } });
    expect((await withAssertion(fine)).status).toBe(200);
    expectRefused(await withAssertion(fine));
  });

  it('refuses an assertion whose header names a critical extension, saying so', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: client.appId,
      sub: client.appId,
      aud: `${TEST_BASE_URL}oauth/token`,
      iat: now,
      exp: now + 300,
    };
    const control = handSignedJwt(client.key.privateKey, { kid: client.keyId }, claims);
    expect((await withAssertion(control)).status).toBe(200);
    for (const crit of [{ crit: ['x-must'], 'x-must': 1 }, { crit: ['b64'], b64: true }, { crit: [] }]) {
      const response = await withAssertion(
        handSignedJwt(client.key.privateKey, { kid: client.keyId, ...crit }, claims),
      );
      expectRefused(response);
      expect(response.body.message).toBe('the assertion header names a critical extension (crit)');
    }
  });

  it('keeps a used jti while its assertion is still accepted: until exp plus the clock tolerance', async () => {
    const iat = Math.floor(Date.now() / 1000) - 100;
    const token = await clientAssertion(client, {
      iat,
      lifetimeSeconds: 60,
      claims: { jti: 'expired-but-tolerated' },
    });
    expect((await withAssertion(token)).status).toBe(200); // exp 40 s ago, within CLOCK_SKEW_SECONDS (60)
    const [row] = (await t.dataSource.query(
      `SELECT extract(epoch FROM expires_at)::int AS expires FROM used_assertions WHERE jti = 'expired-but-tolerated'`,
    )) as { expires: number }[];
    expect(row.expires).toBe(iat + 60 + 60);
    // The pruner forgets what has expired; this one stays, and a replay is still refused.
    await new PruneUsedAssertionsProcessor(t.dataSource).process({ name: JOBS.pruneUsedAssertions } as Job);
    expectRefused(await withAssertion(token));
  });

  it('takes an application id sent in upper case, and issues the token for its stored form', async () => {
    const upper = client.appId.toUpperCase();
    const token = await clientAssertion(client, { claims: { iss: upper, sub: upper } });
    const response = await withAssertion(token, { appId: upper });
    expect(response.status).toBe(200);
    expect(decodeJwt(response.body.accessToken)).toMatchObject({
      sub: client.appId,
      client_id: client.appId,
    });
  });

  it('refuses a wrong grantType with 400 unsupported_grant_type', async () => {
    const response = await withAssertion(await clientAssertion(client), { grantType: 'password' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      errorId: 'unsupported_grant_type',
      code: 400,
      message: expect.any(String),
      detail: [{ path: 'grantType', message: expect.any(String), type: 'invalid' }],
    });
  });

  it('refuses missing fields with 400 and a detail item per field', async () => {
    const response = await exchange({});
    expect(response.status).toBe(400);
    expect(response.body.errorId).toBe('invalid_request');
    expect(response.body.code).toBe(400);
    const paths = (response.body.detail as { path: string; type: string }[]).map((item) => [
      item.path,
      item.type,
    ]);
    expect(paths).toEqual(
      expect.arrayContaining([
        ['appId', 'required'],
        ['token', 'required'],
        ['grantType', 'required'],
      ]),
    );
  });

  it('answers malformed JSON with the token error body', async () => {
    const response = await request(t.http)
      .post('/v1/oauth/app/token')
      .set('Content-Type', 'application/json')
      .send('{"appId": ');
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ errorId: 'invalid_request', code: 400, detail: expect.any(Array) });
  });

  it('refuses a token that is not a JWT', async () => {
    expectRefused(await withAssertion('not.a.jwt'));
    expectRefused(await withAssertion('garbage'));
  });
});
