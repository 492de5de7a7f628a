import { createHmac, randomUUID, webcrypto } from 'node:crypto';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import request from 'supertest';
import {
  clientAssertion,
  newKeyPair,
  registerClient,
  unsignedJwt,
  type AssertionOptions,
  type TestClient,
} from './support/auth.js';
import { bearer, expectValidation } from './support/identity.js';
import { freePort } from './support/processes.js';
import { startTestApp, TEST_BASE_URL, type TestApp } from './support/test-app.js';

/**
 * Standard OAuth 2.0 clients (docs/decisions/0024): the RFC 6749 §4.4 form with an RFC 7523 client
 * assertion at both token routes, answered the RFC 6749 way, and the RFC 8414 metadata; first through a
 * maintained client library (oauth4webapi) over real HTTP, then the answers one by one.
 */

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const TOKEN_ROUTES = ['/v1/oauth/token', '/v1/oauth/app/token'];
/** RFC 6749 §5.2: error_description is printable ASCII without `"` and `\`. */
const DESCRIPTION = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;

/** The client's registered key as the CryptoKey oauth4webapi signs with. */
const cryptoKey = (client: TestClient) =>
  webcrypto.subtle.importKey(
    'pkcs8',
    client.key.privateKey.export({ format: 'der', type: 'pkcs8' }),
    { name: 'ECDSA', namedCurve: 'P-256' },
    false,
    ['sign'],
  );

const expectRfcError = (response: request.Response, status: number, error: string) => {
  expect({ status: response.status, body: response.body as unknown }).toStrictEqual({
    status,
    body: { error, error_description: expect.stringMatching(DESCRIPTION) },
  });
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.headers['cache-control']).toBe('no-store');
  expect(response.headers.pragma).toBe('no-cache');
  expect(response.headers['www-authenticate']).toBeUndefined();
};

describe('a standard client (oauth4webapi) over HTTP on 127.0.0.1', () => {
  let t: TestApp;
  let base: string;
  let client: TestClient;
  let as: oauth.AuthorizationServer;
  const insecure = { [oauth.allowInsecureRequests]: true };

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}/v1/`;
    t = await startTestApp({ env: { PUBLIC_BASE_URL: base } });
    await new Promise<void>((resolve) => t.http.listen(port, '127.0.0.1', resolve));
    client = await registerClient(t.app, 'standard-client');
  });
  afterAll(() => t?.close());

  it('discovers the RFC 8414 metadata at {base_url}.well-known/oauth-authorization-server', async () => {
    const response = await fetch(`${base}.well-known/oauth-authorization-server`);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    as = await oauth.processDiscoveryResponse(new URL(base), response);
    expect(as).toStrictEqual({
      issuer: base,
      token_endpoint: `${base}oauth/token`,
      jwks_uri: `${base}.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['private_key_jwt'],
      token_endpoint_auth_signing_alg_values_supported: ['ES256'],
      response_types_supported: [],
      service_documentation: `${base}docs`,
    });
    // The jwks_uri it names serves the keys that sign the access tokens.
    const jwks = (await (await fetch(as.jwks_uri!)).json()) as { keys: unknown[] };
    expect(jwks.keys.length).toBeGreaterThan(0);
  });

  it("is discovered at RFC 8414's own address, the well-known suffix before the issuer's path (algorithm oauth2)", async () => {
    const issuer = new URL(base);
    const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure });
    expect(new URL(response.url).pathname).toBe('/.well-known/oauth-authorization-server/v1');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(await oauth.processDiscoveryResponse(issuer, response)).toStrictEqual(as);
  });

  it('gets a token with private_key_jwt (ES256, the registered key, its defaults) and calls a CC route with it', async () => {
    // oauth4webapi's own assertion: aud = the issuer (draft-ietf-oauth-rfc7523bis), accepted (decision 0024).
    const auth = oauth.PrivateKeyJwt({ key: await cryptoKey(client), kid: client.keyId });
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      { client_id: client.appId },
      auth,
      new URLSearchParams(),
      insecure,
    );
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('pragma')).toBe('no-cache');
    const result = await oauth.processClientCredentialsResponse(as, { client_id: client.appId }, response);
    expect(result).toStrictEqual({
      access_token: expect.any(String),
      token_type: 'bearer', // oauth4webapi lower-cases it; the wire value is checked below
      expires_in: 900,
    });
    expect(decodeJwt(result.access_token)).toMatchObject({ iss: as.issuer, sub: client.appId });
    const users = await fetch(`${base}users/all`, {
      headers: { authorization: bearer(result.access_token) },
    });
    expect(users.status).toBe(200);
    expect(Array.isArray(await users.json())).toBe(true);
  });

  const grantWithAudience = async (aud: string) => {
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      { client_id: client.appId },
      oauth.PrivateKeyJwt(
        { key: await cryptoKey(client), kid: client.keyId },
        {
          [oauth.modifyAssertion]: (_header, payload) => {
            payload.aud = aud;
          },
        },
      ),
      new URLSearchParams(),
      insecure,
    );
    return oauth.processClientCredentialsResponse(as, { client_id: client.appId }, response).then(
      (result) => ({ result, refusal: undefined }),
      (error: unknown) => ({ result: undefined, refusal: error }),
    );
  };

  it('also gets a token with the token endpoint as the audience (as Spring Security sends it)', async () => {
    const { result } = await grantWithAudience(as.token_endpoint!);
    expect(result).toMatchObject({ token_type: 'bearer', expires_in: 900 });
  });

  it('an assertion for another server is refused with invalid_client, which the library reads as such', async () => {
    const { result, refusal } = await grantWithAudience('https://elsewhere.example/v1/');
    expect(result).toBeUndefined();
    expect(refusal).toBeInstanceOf(oauth.ResponseBodyError);
    expect(refusal).toMatchObject({
      status: 401,
      error: 'invalid_client',
      error_description: 'the assertion claim aud is not valid',
    });
  });
});

describe('the RFC 6749 form at both token routes', () => {
  let t: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    t = await startTestApp({ env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1000' } });
    client = await registerClient(t.app, 'form-client');
  });
  afterAll(() => t?.close());

  const post = (route: string, body: string, type = 'application/x-www-form-urlencoded') =>
    request(t.http).post(route).set('Content-Type', type).send(body);
  /** The parameters as a form body, those set to undefined left out. */
  const encode = (parameters: Record<string, string | undefined>) =>
    new URLSearchParams(
      Object.entries(parameters).filter((entry): entry is [string, string] => entry[1] !== undefined),
    ).toString();
  const form = (route: string, parameters: Record<string, string | undefined>) =>
    post(route, encode(parameters));
  const standard = async (
    overrides: Record<string, string | undefined> = {},
    options?: AssertionOptions,
  ) => ({
    grant_type: 'client_credentials',
    client_id: client.appId,
    client_assertion_type: JWT_BEARER,
    client_assertion: await clientAssertion(client, options),
    ...overrides,
  });
  const json = async (route: string, token: string) =>
    request(t.http).post(route).send({ appId: client.appId, token, grantType: 'client_credentials' });

  describe.each(TOKEN_ROUTES)('POST %s', (route) => {
    it('answers RFC 6749 §5.1, not cached, and the token opens a CC route', async () => {
      const response = await form(route, await standard());
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 900,
      });
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.headers.pragma).toBe('no-cache');
      const users = await request(t.http)
        .get('/v1/users/all')
        .set('Authorization', bearer(response.body.access_token as string));
      expect(users.status).toBe(200);
    });

    it('takes a charset=UTF-8 parameter, no client_id (the assertion’s sub names the client), and ignores unknown parameters', async () => {
      const parameters = await standard({ client_id: undefined, resource: 'https://x.example/', foo: '' });
      const response = await post(
        route,
        encode(parameters),
        'application/x-www-form-urlencoded; charset=UTF-8',
      );
      expect(response.status).toBe(200);
      expect(decodeJwt(response.body.access_token as string).sub).toBe(client.appId);
    });

    it('refuses a grant_type other than client_credentials with 400 unsupported_grant_type', async () => {
      expectRfcError(
        await form(route, await standard({ grant_type: 'password' })),
        400,
        'unsupported_grant_type',
      );
    });

    it('refuses a missing grant_type with 400 invalid_request naming it', async () => {
      const response = await form(route, await standard({ grant_type: undefined }));
      expectRfcError(response, 400, 'invalid_request');
      expect(response.body.error_description).toBe('grant_type is required');
    });

    it('refuses a request without client authentication with 401 invalid_client', async () => {
      const response = await form(route, { grant_type: 'client_credentials', client_id: client.appId });
      expectRfcError(response, 401, 'invalid_client');
      // An empty value counts as absent (RFC 6749 §3.1).
      expectRfcError(
        await form(route, await standard({ client_assertion: '', client_assertion_type: '' })),
        401,
        'invalid_client',
      );
    });

    it('refuses an assertion without its type, or a type without an assertion, with 400 invalid_request', async () => {
      expectRfcError(
        await form(route, await standard({ client_assertion_type: undefined })),
        400,
        'invalid_request',
      );
      expectRfcError(
        await form(route, await standard({ client_assertion: undefined })),
        400,
        'invalid_request',
      );
    });

    it('refuses another client_assertion_type with 401 invalid_client', async () => {
      const response = await form(
        route,
        await standard({ client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer' }),
      );
      expectRfcError(response, 401, 'invalid_client');
    });

    it('refuses a bad signature with 401 invalid_client', async () => {
      const [header, payload, signature] = (await clientAssertion(client)).split('.');
      const flipped = signature.slice(0, -2) + (signature.endsWith('AA') ? 'BB' : 'AA');
      const response = await form(
        route,
        await standard({ client_assertion: `${header}.${payload}.${flipped}` }),
      );
      expectRfcError(response, 401, 'invalid_client');
      expect(response.body.error_description).toBe('the assertion signature is not valid');
    });

    it('refuses a client_id other than the assertion’s iss and sub with 401 invalid_client', async () => {
      const other = await registerClient(t.app, 'other-client');
      const response = await form(route, await standard({ client_id: other.appId }));
      expectRfcError(response, 401, 'invalid_client');
      expect(response.body.error_description).toBe('client_id does not match the assertion iss and sub');
    });

    it('refuses a repeated parameter with 400 invalid_request (RFC 6749 §3.2)', async () => {
      const body = `${encode(await standard())}&grant_type=client_credentials`;
      const response = await post(route, body);
      expectRfcError(response, 400, 'invalid_request');
      expect(response.body.error_description).toBe('grant_type is repeated');
    });

    it('refuses a scope with 400 invalid_scope (the service defines none)', async () => {
      expectRfcError(await form(route, await standard({ scope: 'wallet' })), 400, 'invalid_scope');
    });

    it('refuses a charset other than UTF-8, an over-long parameter and a NUL with 400 invalid_request', async () => {
      const body = encode(await standard());
      expectRfcError(
        await post(route, body, 'application/x-www-form-urlencoded; charset=iso-8859-1'),
        400,
        'invalid_request',
      );
      expectRfcError(
        await form(route, await standard({ client_id: 'x'.repeat(101) })),
        400,
        'invalid_request',
      );
      const nul = await form(route, await standard({ client_id: '\u0000' }));
      expectRfcError(nul, 400, 'invalid_request');
      expect(nul.body.error_description).toBe('form parameters must not contain NUL characters');
    });

    it('keeps the JSON body and its answers as the interface has them', async () => {
      const response = await json(route, await clientAssertion(client));
      expect(response.status).toBe(200);
      expect(Object.keys(response.body as object)).toEqual(['type', 'accessToken', 'expiresIn']);
      expect(response.body).toStrictEqual({
        type: 'Bearer',
        accessToken: expect.any(String),
        expiresIn: 900,
      });
      expect(response.headers.pragma).toBeUndefined();
      const refused = await json(
        route,
        await clientAssertion(client, { claims: { aud: 'https://elsewhere.example/v1/' } }),
      );
      expect(refused.status).toBe(401);
      expect(refused.body).toStrictEqual({
        errorId: 'invalid_client',
        code: 401,
        message: 'the assertion claim aud is not valid',
      });
      const missing = await request(t.http).post(route).send({});
      expect(missing.status).toBe(400);
      expect(missing.body).toMatchObject({
        errorId: 'invalid_request',
        code: 400,
        detail: expect.any(Array),
      });
    });
  });

  it('applies exactly the assertion rules of the JSON body: the same refusals, the same messages', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: client.appId, sub: client.appId, aud: `${TEST_BASE_URL}oauth/token`, iat: now };
    const hs256 = unsignedJwt({ alg: 'HS256', kid: client.keyId }, { ...claims, exp: now + 600 }).slice(
      0,
      -1,
    );
    const cases: [string, () => Promise<string>][] = [
      ['valid, aud {base_url}oauth/token', () => clientAssertion(client)],
      [
        'valid, aud {base_url}oauth/app/token',
        () => clientAssertion(client, { claims: { aud: `${TEST_BASE_URL}oauth/app/token` } }),
      ],
      ['valid, aud {base_url}', () => clientAssertion(client, { claims: { aud: TEST_BASE_URL } })],
      ['aud {base_url}users', () => clientAssertion(client, { claims: { aud: `${TEST_BASE_URL}users` } })],
      [
        'aud elsewhere',
        () => clientAssertion(client, { claims: { aud: 'https://elsewhere.example/v1/oauth/token' } }),
      ],
      ['expired', () => clientAssertion(client, { iat: now - 7200, lifetimeSeconds: 3600 })],
      ['lifetime 3601 s', () => clientAssertion(client, { lifetimeSeconds: 3601 })],
      ['iat in the future', () => clientAssertion(client, { iat: now + 600, lifetimeSeconds: 600 })],
      ['no exp', () => clientAssertion(client, { omit: ['exp'] })],
      ['unknown kid', () => clientAssertion(client, { header: { kid: 'not-a-registered-key' } })],
      ['another key under the kid', () => clientAssertion(client, { privateKey: newKeyPair().privateKey })],
      [
        'alg none',
        async () => unsignedJwt({ alg: 'none', kid: client.keyId }, { ...claims, exp: now + 600 }),
      ],
      [
        'HS256 with the public key',
        async () =>
          `${hs256}.${createHmac('sha256', client.key.publicPem).update(hs256).digest('base64url')}`,
      ],
      ['not a JWT', async () => 'garbage'],
    ];
    const outcomes = async (route: string, viaForm: boolean) => {
      const seen: string[] = [];
      for (const [name, build] of cases) {
        const assertion = await build();
        const response = viaForm
          ? await form(route, await standard({ client_assertion: assertion }))
          : await json(route, assertion);
        const body = response.body as Record<string, unknown>;
        seen.push(
          `${name}: ${response.status} ${String(viaForm ? (body.error ?? 'token') : (body.errorId ?? 'token'))} ${String(
            viaForm ? (body.error_description ?? '') : (body.message ?? ''),
          )}`,
        );
      }
      return seen;
    };
    const reference = await outcomes('/v1/oauth/app/token', false);
    expect(reference.filter((line) => line.includes(': 200 token'))).toHaveLength(3);
    expect(reference.filter((line) => line.includes(': 401 invalid_client '))).toHaveLength(cases.length - 3);
    for (const route of TOKEN_ROUTES) {
      expect({ route, form: await outcomes(route, true) }).toStrictEqual({ route, form: reference });
      expect({ route, json: await outcomes(route, false) }).toStrictEqual({ route, json: reference });
    }
  });

  it('an assertion with a jti is single-use whichever body carries it', async () => {
    const assertion = await clientAssertion(client, { claims: { jti: randomUUID() } });
    expect((await form('/v1/oauth/token', await standard({ client_assertion: assertion }))).status).toBe(200);
    expectRfcError(
      await form('/v1/oauth/app/token', await standard({ client_assertion: assertion })),
      401,
      'invalid_client',
    );
    const replayed = await json('/v1/oauth/app/token', assertion);
    expect(replayed.body).toStrictEqual({
      errorId: 'invalid_client',
      code: 401,
      message: 'the assertion was already used',
    });
  });

  it('refuses a form body over BODY_LIMIT with 413 in the RFC shape', async () => {
    const parameters = await standard({ padding: 'x'.repeat(110 * 1024) });
    const response = await form('/v1/oauth/token', parameters);
    expectRfcError(response, 413, 'invalid_request');
  });

  it('parses forms on the token routes only: any other route still refuses them as the interface says', async () => {
    const response = await post('/v1/users', 'firstName=Ada');
    expect(expectValidation(response)).toStrictEqual([
      { path: '', message: 'Content-Type must be application/json', type: 'invalid' },
    ]);
  });

  it('publishes the metadata with this base URL, without credentials', async () => {
    const response = await request(t.http).get('/v1/.well-known/oauth-authorization-server');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      issuer: TEST_BASE_URL,
      token_endpoint: `${TEST_BASE_URL}oauth/token`,
      jwks_uri: `${TEST_BASE_URL}.well-known/jwks.json`,
    });
  });

  it("answers RFC 8414's own address (query kept) as the prefixed route, and only that address outside the prefix", async () => {
    const prefixed = await request(t.http).get('/v1/.well-known/oauth-authorization-server');
    const rootForm = await request(t.http).get('/.well-known/oauth-authorization-server/v1?x=1');
    expect(rootForm.status).toBe(200);
    expect(rootForm.body).toStrictEqual(prefixed.body);
    expect(rootForm.headers['cache-control']).toBe('public, max-age=300');
    expect(rootForm.headers['x-request-id']).toEqual(expect.any(String));
    for (const path of [
      '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-authorization-server/v1/',
      '/.well-known/oauth-authorization-server/v2',
      '/.well-known/jwks.json',
      '/.well-known/openid-configuration/v1',
    ]) {
      const response = await request(t.http).get(path);
      expect({ path, status: response.status, body: response.body as unknown }).toStrictEqual({
        path,
        status: 404,
        body: { name: 'NotFoundError', message: 'Resource not found', detail: { item: path } },
      });
    }
  });

  it('reads the form at a token route written in other letter cases, as Express routes it', async () => {
    // Express matches paths without regard to case: the route found must get its form parser and error style.
    const response = await form('/v1/OAuth/App/Token', await standard());
    expect(response.status).toBe(200);
    expect(response.body).toStrictEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 900,
    });
    // A refusal there is written in the route's own style (RFC 6749 §5.2), not the JSON error body.
    expectRfcError(
      await form('/v1/OAUTH/TOKEN', await standard({ client_assertion: undefined })),
      400,
      'invalid_request',
    );
  });
});

describe('the token rate limit with forms (TOKEN_RATE_LIMIT_PER_MINUTE: 3 here)', () => {
  let t: TestApp;
  let client: TestClient;

  beforeAll(async () => {
    t = await startTestApp({ env: { TOKEN_RATE_LIMIT_PER_MINUTE: '3' } });
    client = await registerClient(t.app, 'form-limit');
  });
  afterAll(() => t?.close());

  it('counts both routes and both bodies together; a form over the limit gets 429 in the RFC shape', async () => {
    const formBody = async () =>
      new URLSearchParams({
        grant_type: 'client_credentials',
        client_assertion_type: JWT_BEARER,
        client_assertion: await clientAssertion(client),
      }).toString();
    const viaForm = async (route: string) =>
      request(t.http)
        .post(route)
        .type('form')
        .send(await formBody());
    const viaJson = async (route: string) =>
      request(t.http)
        .post(route)
        .send({ appId: client.appId, token: await clientAssertion(client), grantType: 'client_credentials' });
    expect((await viaForm('/v1/oauth/token')).status).toBe(200);
    expect((await viaJson('/v1/oauth/app/token')).status).toBe(200);
    expect((await viaForm('/v1/oauth/app/token')).status).toBe(200);
    const limited = await viaForm('/v1/oauth/token');
    expectRfcError(limited, 429, 'rate_limited');
    expect(limited.headers['retry-after']).toBe('60');
    const limitedJson = await viaJson('/v1/oauth/token');
    expect(limitedJson.status).toBe(429);
    expect(limitedJson.body).toStrictEqual({
      errorId: 'rate_limited',
      code: 429,
      message: expect.any(String),
    });
    expect(limitedJson.headers.pragma).toBeUndefined();
  });
});
