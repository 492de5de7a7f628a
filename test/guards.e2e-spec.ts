import { createHmac, KeyObject, randomUUID } from 'node:crypto';
import { Controller, Get, Module } from '@nestjs/common';
import { DiscoveryModule, NestFactory } from '@nestjs/core';
import { generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import request from 'supertest';
import { RouteCatalog } from '../src/common/http/route-catalog.js';
import { APP_CONFIG, loadConfig } from '../src/config/app-config.js';
import { SigningKeysService } from '../src/modules/auth/signing-keys.service.js';
import {
  accessToken,
  clientAssertion,
  handSignedJwt,
  registerClient,
  subjectToken,
  unsignedJwt,
  type TestClient,
} from './support/auth.js';
import { FIXTURE_RESOURCES, FixtureModule } from './support/fixture.module.js';
import { startTestApp, TEST_BASE_URL, type TestApp } from './support/test-app.js';

const validEcho = () => ({
  name: 'Ada',
  count: 1,
  kind: 'b',
  address: { streetName: 'Main Street', zipCode: '1234' },
});

describe('authentication and authorization on fixture routes', () => {
  let t: TestApp;
  let appA: TestClient;
  let appB: TestClient;
  let tokenA: string;
  let tokenB: string;
  const ownerA1 = randomUUID();
  const ownerA2 = randomUUID();
  const resourceOfA1 = randomUUID();
  const appLevelResourceOfA = randomUUID();
  const resourceOfB = randomUUID();

  beforeAll(async () => {
    t = await startTestApp({ extraModules: [FixtureModule] });
    appA = await registerClient(t.app, 'app-a');
    appB = await registerClient(t.app, 'app-b');
    tokenA = await accessToken(t.http, appA);
    tokenB = await accessToken(t.http, appB);
    FIXTURE_RESOURCES.set(resourceOfA1, { appId: appA.appId, ownerIds: [ownerA1] });
    FIXTURE_RESOURCES.set(appLevelResourceOfA, { appId: appA.appId, ownerIds: [] });
    FIXTURE_RESOURCES.set(resourceOfB, { appId: appB.appId, ownerIds: [randomUUID()] });
  });
  afterAll(async () => {
    FIXTURE_RESOURCES.clear();
    await t.close();
  });

  const withAuth = (test: request.Test, authorization?: string) =>
    authorization === undefined ? test : test.set('Authorization', authorization);
  const ccOnly = (authorization?: string) =>
    withAuth(request(t.http).get('/v1/test-fixtures/cc-only'), authorization);
  const echo = (authorization?: string) =>
    withAuth(request(t.http).post('/v1/test-fixtures/echo'), authorization).send(validEcho());
  const resource = (uuid: string, authorization?: string) =>
    withAuth(request(t.http).get(`/v1/test-fixtures/resources/${uuid}`), authorization);
  const bearer = (token: string) => `Bearer ${token}`;

  const expectUnauthorized = (response: request.Response) => {
    expect(response.status).toBe(401);
    expect(response.body).toStrictEqual({ name: 'UnauthorizedError', message: expect.any(String) });
  };
  const expectNotFound = (response: request.Response, item: string) => {
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ name: 'NotFoundError', message: 'Resource not found', detail: { item } });
  };
  /** Refused on every protected fixture route. */
  const expectRefusedEverywhere = async (authorization: string) => {
    expectUnauthorized(await ccOnly(authorization));
    expectUnauthorized(await echo(authorization));
    expectUnauthorized(await resource(resourceOfA1, authorization));
  };

  describe('missing or malformed credentials', () => {
    it('refuses a request without an Authorization header', async () => {
      expectUnauthorized(await ccOnly());
      expectUnauthorized(await echo());
      expectUnauthorized(await resource(resourceOfA1));
    });

    it('refuses a garbage token', async () => {
      await expectRefusedEverywhere('Bearer garbage');
      await expectRefusedEverywhere('Bearer a.b.c');
    });

    it('refuses Bearer with an empty token', async () => {
      await expectRefusedEverywhere('Bearer ');
      await expectRefusedEverywhere('Bearer');
    });

    it('refuses a valid access token with anything after it', async () => {
      await expectRefusedEverywhere(`Bearer ${tokenA} junk`);
      await expectRefusedEverywhere(`Bearer ${tokenA},Bearer ${tokenB}`);
      // A run of spaces between the scheme and the token is RFC 6750's 1*SP (and HTTP trims the value's ends).
      expect((await ccOnly(`Bearer   ${tokenA}`)).status).toBe(200);
      expect((await ccOnly(` Bearer ${tokenA} `)).status).toBe(200);
    });

    it('refuses another scheme carrying a valid access token', async () => {
      await expectRefusedEverywhere(`Basic ${tokenA}`);
      await expectRefusedEverywhere(tokenA);
    });

    it('refuses a client assertion used as a bearer token', async () => {
      await expectRefusedEverywhere(bearer(await clientAssertion(appA)));
      await expectRefusedEverywhere(
        bearer(await clientAssertion(appA, { claims: { aud: `${TEST_BASE_URL}oauth/app/token` } })),
      );
      // The issuer as aud (accepted at the token endpoint, decision 0024): still not a user token (sub = iss).
      await expectRefusedEverywhere(bearer(await clientAssertion(appA, { claims: { aud: TEST_BASE_URL } })));
    });
  });

  describe('client principal (access token)', () => {
    it('is accepted on the cc-only route', async () => {
      const response = await ccOnly(bearer(tokenA));
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ kind: 'client', appId: appA.appId });
    });

    it('is accepted on the either routes', async () => {
      const response = await echo(bearer(tokenA));
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        body: validEcho(),
        principal: { kind: 'client', appId: appA.appId },
      });
      expect((await resource(resourceOfA1, bearer(tokenA))).status).toBe(200);
    });

    it('accepts the lowercase scheme name', async () => {
      const response = await ccOnly(`bearer ${tokenA}`);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ kind: 'client', appId: appA.appId });
    });
  });

  describe('access tokens signed with the service key (forged in-process, to isolate each check)', () => {
    /** An access token's claims, as the service writes them for application A. */
    const accessClaims = (claims: JWTPayload = {}): JWTPayload => {
      const now = Math.floor(Date.now() / 1000);
      return {
        client_id: appA.appId,
        token_use: 'access',
        iss: TEST_BASE_URL,
        aud: TEST_BASE_URL,
        sub: appA.appId,
        iat: now,
        exp: now + 300,
        jti: randomUUID(),
        ...claims,
      };
    };
    /** Signs access-token-like JWTs with the service's real current key. */
    const serviceSigned = async (header: Record<string, unknown>, claims: JWTPayload = {}) => {
      const key = await t.app.get(SigningKeysService).current();
      return new SignJWT(accessClaims(claims))
        .setProtectedHeader({ alg: 'ES256', kid: key.kid, ...header })
        .sign(key.privateKey);
    };

    it('control: the same construction with typ at+jwt is accepted', async () => {
      const response = await ccOnly(bearer(await serviceSigned({ typ: 'at+jwt' })));
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ kind: 'client', appId: appA.appId });
    });

    it('refuses a wrong or missing typ header', async () => {
      expectUnauthorized(await ccOnly(bearer(await serviceSigned({ typ: 'JWT' }))));
      expectUnauthorized(await ccOnly(bearer(await serviceSigned({}))));
    });

    it('refuses wrong claims: token_use, sub other than client_id, issuer, audience, expired', async () => {
      const now = Math.floor(Date.now() / 1000);
      for (const claims of [
        { token_use: 'id' },
        { sub: appB.appId },
        { iss: 'https://elsewhere.example/v1/' },
        { aud: 'https://elsewhere.example/v1/' },
        { iat: now - 7200, exp: now - 3600 },
      ]) {
        expectUnauthorized(await ccOnly(bearer(await serviceSigned({ typ: 'at+jwt' }, claims))));
      }
    });

    it('refuses a token whose header names a critical extension (crit)', async () => {
      const key = await t.app.get(SigningKeysService).current();
      const claims = accessClaims();
      const signed = (header: Record<string, unknown>) =>
        bearer(
          handSignedJwt(KeyObject.from(key.privateKey), { kid: key.kid, typ: 'at+jwt', ...header }, claims),
        );
      expect((await ccOnly(signed({}))).status).toBe(200);
      await expectRefusedEverywhere(signed({ crit: ['x-must'], 'x-must': 1 }));
    });

    it('refuses a token signed by another key under the service kid', async () => {
      const key = await t.app.get(SigningKeysService).current();
      const { privateKey } = await generateKeyPair('ES256');
      const now = Math.floor(Date.now() / 1000);
      const forged = await new SignJWT({ client_id: appA.appId, token_use: 'access' })
        .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
        .setIssuer(TEST_BASE_URL)
        .setAudience(TEST_BASE_URL)
        .setSubject(appA.appId)
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(privateKey);
      await expectRefusedEverywhere(bearer(forged));
    });
  });

  describe('subject principal (user token signed by the application)', () => {
    it('is accepted on the either routes with the subject as principal', async () => {
      const token = await subjectToken(appA, ownerA1);
      const response = await echo(bearer(token));
      expect(response.status).toBe(200);
      expect(response.body.principal).toStrictEqual({ kind: 'subject', appId: appA.appId, subject: ownerA1 });
      const own = await resource(resourceOfA1, bearer(token));
      expect(own.status).toBe(200);
      expect(own.body).toEqual({ uuid: resourceOfA1 });
    });

    it('is refused on the cc-only route', async () => {
      expectUnauthorized(await ccOnly(bearer(await subjectToken(appA, ownerA1))));
    });

    it('normalises an upper-case subject uuid', async () => {
      const response = await echo(bearer(await subjectToken(appA, ownerA1.toUpperCase())));
      expect(response.status).toBe(200);
      expect(response.body.principal).toStrictEqual({ kind: 'subject', appId: appA.appId, subject: ownerA1 });
    });
  });

  describe('attacks on the subject token', () => {
    const now = () => Math.floor(Date.now() / 1000);
    const claimsOf = (client: TestClient, subject: string) => ({
      iss: client.appId,
      sub: subject,
      aud: TEST_BASE_URL,
      iat: now(),
      exp: now() + 600,
    });

    it('refuses alg none', async () => {
      const token = unsignedJwt({ alg: 'none', kid: appA.keyId }, claimsOf(appA, ownerA1));
      await expectRefusedEverywhere(bearer(token));
      await expectRefusedEverywhere(bearer(token.slice(0, -1)));
    });

    it('refuses HS256 signed with the application public key PEM as the secret', async () => {
      const unsigned = unsignedJwt(
        { alg: 'HS256', kid: appA.keyId, typ: 'JWT' },
        claimsOf(appA, ownerA1),
      ).slice(0, -1);
      const signature = createHmac('sha256', appA.key.publicPem).update(unsigned).digest('base64url');
      await expectRefusedEverywhere(bearer(`${unsigned}.${signature}`));
    });

    it('refuses an unknown kid and a missing kid', async () => {
      await expectRefusedEverywhere(
        bearer(await subjectToken(appA, ownerA1, { header: { kid: 'no-such-key-id' } })),
      );
      await expectRefusedEverywhere(
        bearer(await subjectToken(appA, ownerA1, { header: { kid: undefined } })),
      );
    });

    it('refuses a wrong audience (token endpoint, other host, missing)', async () => {
      for (const options of [
        { claims: { aud: `${TEST_BASE_URL}oauth/token` } },
        { claims: { aud: 'https://elsewhere.example/v1/' } },
        { omit: ['aud'] },
      ]) {
        await expectRefusedEverywhere(bearer(await subjectToken(appA, ownerA1, options)));
      }
    });

    it('refuses an aud array, even one naming {base_url} (a token made for other services too)', async () => {
      for (const aud of [
        [TEST_BASE_URL, 'https://evil.example/'],
        ['https://evil.example/', TEST_BASE_URL],
        [TEST_BASE_URL],
      ]) {
        await expectRefusedEverywhere(bearer(await subjectToken(appA, ownerA1, { claims: { aud } })));
      }
    });

    it('refuses a token whose header names a critical extension (crit), which jsonwebtoken ignores', async () => {
      const signed = (header: Record<string, unknown>) =>
        bearer(handSignedJwt(appA.key.privateKey, { kid: appA.keyId, ...header }, claimsOf(appA, ownerA1)));
      expect((await echo(signed({}))).status).toBe(200);
      await expectRefusedEverywhere(signed({ crit: ['x-must'], 'x-must': 1 }));
      await expectRefusedEverywhere(signed({ crit: [] }));
    });

    it('refuses iss of another application', async () => {
      // Signed with A's key under A's kid, claiming to come from B.
      await expectRefusedEverywhere(
        bearer(await subjectToken(appA, ownerA1, { claims: { iss: appB.appId } })),
      );
      // Claiming B with B's kid, but signed with A's key.
      await expectRefusedEverywhere(
        bearer(
          await subjectToken(appB, ownerA1, { header: { kid: appB.keyId }, privateKey: appA.key.privateKey }),
        ),
      );
      // A missing iss.
      await expectRefusedEverywhere(bearer(await subjectToken(appA, ownerA1, { omit: ['iss'] })));
    });

    it('refuses an expired token', async () => {
      const iat = now() - 7200;
      await expectRefusedEverywhere(bearer(await subjectToken(appA, ownerA1, { iat, lifetimeSeconds: 600 })));
    });

    it('refuses a lifetime over 3600 seconds, and accepts exactly 3600', async () => {
      await expectRefusedEverywhere(bearer(await subjectToken(appA, ownerA1, { lifetimeSeconds: 3601 })));
      expect((await echo(bearer(await subjectToken(appA, ownerA1, { lifetimeSeconds: 3600 })))).status).toBe(
        200,
      );
    });

    it('refuses a token without iat or exp, or issued in the future', async () => {
      await expectRefusedEverywhere(bearer(await subjectToken(appA, ownerA1, { omit: ['exp'] })));
      await expectRefusedEverywhere(bearer(await subjectToken(appA, ownerA1, { omit: ['iat'] })));
      await expectRefusedEverywhere(
        bearer(await subjectToken(appA, ownerA1, { iat: now() + 900, lifetimeSeconds: 600 })),
      );
    });

    it('refuses sub equal to the appId, a non-uuid sub (or one of no uuid version or variant) and a missing sub', async () => {
      await expectRefusedEverywhere(bearer(await subjectToken(appA, appA.appId)));
      await expectRefusedEverywhere(bearer(await subjectToken(appA, 'not-a-uuid')));
      // uuid-shaped, but of no version the routes take (decision 0091): the user it created could never be read.
      await expectRefusedEverywhere(bearer(await subjectToken(appA, '11111111-1111-1111-1111-111111111111')));
      await expectRefusedEverywhere(bearer(await subjectToken(appA, '0f3c2a1e-9b7d-4c1a-7e2f-5d6c7b8a9e0f')));
      await expectRefusedEverywhere(bearer(await subjectToken(appA, ownerA1, { omit: ['sub'] })));
    });

    it('refuses a tampered payload', async () => {
      const token = await subjectToken(appA, ownerA1);
      const [header, , signature] = token.split('.');
      const payload = Buffer.from(JSON.stringify(claimsOf(appA, ownerA2))).toString('base64url');
      await expectRefusedEverywhere(bearer(`${header}.${payload}.${signature}`));
    });
  });

  describe('a disabled application', () => {
    it('loses its access tokens and its user tokens within AUTH_CACHE_MS (1 s)', async () => {
      const app = await registerClient(t.app, 'to-be-disabled');
      const token = await accessToken(t.http, app);
      const userToken = await subjectToken(app, ownerA1);
      expect((await ccOnly(bearer(token))).status).toBe(200);
      expect((await echo(bearer(userToken))).status).toBe(200);

      // Disabled behind the service's back (no in-process change to clear the verified-token cache).
      await t.dataSource.query(`UPDATE applications SET status = 'disabled' WHERE id = $1`, [app.appId]);
      const disabledAt = Date.now();
      for (;;) {
        // When this round's requests were sent (at the earliest): a round that ends late on a loaded machine
        // may still have begun within the bound.
        const startedAt = Date.now();
        const statuses = [
          (await ccOnly(bearer(token))).status,
          (await echo(bearer(token))).status,
          (await echo(bearer(userToken))).status,
        ];
        if (statuses.every((status) => status === 401)) break;
        expect(startedAt - disabledAt).toBeLessThan(1000 + 500); // the cache's bound, and a margin
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expectUnauthorized(await ccOnly(bearer(token)));
      expectUnauthorized(await echo(bearer(token)));
      expectUnauthorized(await echo(bearer(userToken)));
    });
  });

  describe('tenancy: another owner or another application is 404', () => {
    it('a subject reaches its own resource only', async () => {
      expect((await resource(resourceOfA1, bearer(await subjectToken(appA, ownerA1)))).status).toBe(200);
      expectNotFound(await resource(resourceOfA1, bearer(await subjectToken(appA, ownerA2))), resourceOfA1);
    });

    it('a subject does not reach an application-level resource of its own application', async () => {
      expectNotFound(
        await resource(appLevelResourceOfA, bearer(await subjectToken(appA, ownerA1))),
        appLevelResourceOfA,
      );
      expect((await resource(appLevelResourceOfA, bearer(tokenA))).status).toBe(200);
    });

    it('a client principal reaches every resource of its application', async () => {
      const response = await resource(resourceOfA1, bearer(tokenA));
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ uuid: resourceOfA1 });
    });

    it("another application's resource is 404 to its client and to its subjects", async () => {
      expectNotFound(await resource(resourceOfA1, bearer(tokenB)), resourceOfA1);
      // Even when B's user token names A's owner as its subject.
      expectNotFound(await resource(resourceOfA1, bearer(await subjectToken(appB, ownerA1))), resourceOfA1);
      expectNotFound(await resource(resourceOfB, bearer(tokenA)), resourceOfB);
      expect((await resource(resourceOfB, bearer(tokenB))).status).toBe(200);
    });

    it('an unknown resource is the same 404', async () => {
      const unknown = randomUUID();
      expectNotFound(await resource(unknown, bearer(tokenA)), unknown);
    });
  });
});

describe('route catalog of the real application', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('declares one policy per route', () => {
    const routes = t.app
      .get(RouteCatalog)
      .all()
      .map((route) => `${route.method} ${route.path} -> ${route.policy}`);
    // Users, Companies and Accounts as the interface's tables say (CC = cc, Either = either); KYC data routes as designed.
    expect(routes).toEqual([
      'GET /v1/.well-known/jwks.json -> public',
      'GET /v1/.well-known/oauth-authorization-server -> public',
      'GET /v1/audit -> cc',
      'POST /v1/companies -> either',
      'DELETE /v1/companies/:uuid -> either',
      'GET /v1/companies/:uuid -> either',
      'PATCH /v1/companies/:uuid -> either',
      'GET /v1/companies/:uuid/documents -> either',
      'POST /v1/companies/:uuid/documents -> either',
      'GET /v1/companies/:uuid/kyc-data -> either',
      'POST /v1/companies/:uuid/kyc-data -> either',
      'GET /v1/companies/:uuid/kyc-data/history -> cc',
      'GET /v1/companies/all -> cc',
      'POST /v1/counterparty -> cc',
      'GET /v1/documents/:uuid -> either',
      'GET /v1/documents/:uuid/content -> either',
      'GET /v1/events -> cc',
      'GET /v1/events/:uuid -> cc',
      'GET /v1/health/live -> public',
      'GET /v1/health/ready -> public',
      'POST /v1/kyc/sessions -> either',
      'GET /v1/kyc/sessions/:uuid -> either',
      'POST /v1/kyc/sessions/:uuid/steps/:step -> either',
      'GET /v1/metrics -> ops',
      'POST /v1/mobile/simSwap -> either',
      'POST /v1/mobile/sms -> either',
      'GET /v1/mobile/sms/:uuid -> either',
      'POST /v1/oauth/app/token -> public',
      'POST /v1/oauth/token -> public',
      'POST /v1/users -> either',
      'DELETE /v1/users/:uuid -> either',
      'GET /v1/users/:uuid -> cc',
      'PATCH /v1/users/:uuid -> either',
      'GET /v1/users/:uuid/documents -> either',
      'POST /v1/users/:uuid/documents -> either',
      'GET /v1/users/:uuid/kyc-data -> either',
      'PATCH /v1/users/:uuid/kyc-data -> either',
      'POST /v1/users/:uuid/kyc-data -> either',
      'GET /v1/users/:uuid/kyc-data/history -> cc',
      'GET /v1/users/all -> cc',
      // Accounts and their balance, limits, fees and operated amounts as the interface's tables say.
      'POST /v1/wallet/accounts -> either',
      'DELETE /v1/wallet/accounts/:uuid -> either',
      'GET /v1/wallet/accounts/:uuid -> either',
      'PATCH /v1/wallet/accounts/:uuid -> either',
      'PATCH /v1/wallet/accounts/:uuid/alias -> either',
      'GET /v1/wallet/accounts/:uuid/balance -> either',
      'PATCH /v1/wallet/accounts/:uuid/balance -> cc',
      'POST /v1/wallet/accounts/:uuid/balance -> cc',
      'GET /v1/wallet/accounts/:uuid/fees -> cc',
      'PATCH /v1/wallet/accounts/:uuid/fees -> cc',
      'GET /v1/wallet/accounts/:uuid/fulloperado -> cc',
      'GET /v1/wallet/accounts/:uuid/limits -> cc',
      'PATCH /v1/wallet/accounts/:uuid/limits -> cc',
      'POST /v1/wallet/accounts/:uuid/limits -> cc',
      'GET /v1/wallet/accounts/:uuid/operado -> cc',
      'GET /v1/wallet/accounts/:uuid/statement -> either',
      'GET /v1/wallet/accounts/:uuid/transactions -> either',
      // Transfers as the interface's table says.
      'POST /v1/wallet/transactions -> either',
      'GET /v1/wallet/transactions/:uuid -> either',
      // Reversals (docs/decisions/0031): given back by the receiving application, read by either.
      'GET /v1/wallet/transactions/:uuid/reversals -> either',
      'POST /v1/wallet/transactions/:uuid/reversals -> either',
      'GET /v1/wallet/transactions/all -> cc',
    ]);
  });
});

@Controller('unguarded')
class UnguardedController {
  @Get()
  open(): { open: true } {
    return { open: true };
  }
}

describe('deny by default', () => {
  it('refuses to start with a route that declares no auth policy', async () => {
    // The route catalog alone, as the application builds it; no database is needed to prove the start fails.
    @Module({
      imports: [DiscoveryModule],
      controllers: [UnguardedController],
      providers: [RouteCatalog, { provide: APP_CONFIG, useValue: loadConfig({ NODE_ENV: 'test' }) }],
    })
    class UnguardedAppModule {}
    await expect(
      NestFactory.createApplicationContext(UnguardedAppModule, { logger: false, abortOnError: false }),
    ).rejects.toThrow(/without an auth policy.*GET \/v1\/unguarded \(UnguardedController\.open\)/);
  });
});
