import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { AppsService } from '../src/modules/apps/apps.service.js';
import { parsePublicKey } from '../src/modules/apps/public-key.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import {
  newKeyPair,
  randomSubject,
  registerClient,
  subjectToken,
  unsignedJwt,
  type TestClient,
} from './support/auth.js';
import { createTestDatabase } from './support/database.js';
import { proxyWithStatementLog, type PgStatementLog } from './support/pg-statements.js';
import { runCli } from './support/processes.js';
import type { TcpProxy } from './support/tcp-proxy.js';
import { startTestApp, TEST_BASE_URL, type TestApp } from './support/test-app.js';

/** Interface, Errors rule 2: the unauthorized body, exactly as every refused credential gets it. */
const UNAUTHORIZED_BODY = '{"name":"UnauthorizedError","message":"Missing or invalid credentials"}';
/** The capacity of UnknownKeyNames. */
const CAPACITY = 10_000;

/** A route that takes a user token: 404 (no such account) once the token is accepted, 401 before. */
const readAccount = (t: TestApp, token: string) =>
  request(t.http).get(`/v1/wallet/accounts/${randomUUID()}`).set('Authorization', `Bearer ${token}`);

const expectUnauthorized = (response: request.Response) => {
  expect(response.status).toBe(401);
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(response.text).toBe(UNAUTHORIZED_BODY);
};

/** Runs `send` over `items`, `concurrency` at a time. */
async function inParallel<T>(
  items: T[],
  concurrency: number,
  send: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await send(items[next++]);
    }),
  );
}

/** A key id of the registered form (an RFC 7638 thumbprint's length and alphabet) that no key has. */
const randomKeyId = () => randomBytes(32).toString('base64url');

/** A user token of an application that does not exist: unsigned, for a key lookup comes before the signature. */
const tokenOfUnknownApplication = (appId: string, keyId = randomKeyId()) =>
  unsignedJwt(
    { alg: 'ES256', kid: keyId },
    {
      iss: appId,
      sub: randomSubject(),
      aud: TEST_BASE_URL,
      iat: Math.floor(Date.now() / 1000),
      exp: Math.floor(Date.now() / 1000) + 600,
    },
    randomBytes(64).toString('base64url'),
  );

/**
 * Decision 0057: a user token whose `iss` or `kid` names nothing costs one key lookup per distinct name (then
 * none for AUTH_CACHE_MS), in a bounded structure apart from the verified tokens. The lookups are counted on the
 * wire: the statements that reach PostgreSQL through a proxy and read `application_keys`.
 */
describe('user tokens whose application or key is unknown', () => {
  let database: { url: string; drop: () => Promise<void> };
  let proxy: TcpProxy;
  let statements: PgStatementLog;
  let t: TestApp;
  let client: TestClient;
  const lookups = () => statements.count('application_keys');

  beforeAll(async () => {
    database = await createTestDatabase();
    const proxied = await proxyWithStatementLog(database.url);
    proxy = proxied.proxy;
    statements = proxied.log;
    // A window far longer than each test, so that what is counted does not depend on the machine's speed.
    t = await startTestApp({ databaseUrl: proxied.url, env: { AUTH_CACHE_MS: '60000' } });
    client = await registerClient(t.app, 'known');
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('counts the lookup of a known key (the measure works)', async () => {
    const before = lookups();
    expect((await readAccount(t, await subjectToken(client, randomSubject()))).status).toBe(404);
    expect(lookups()).toBe(before + 1);
  });

  it('an unknown application: one lookup for every token naming it, whichever its kid, the same 401', async () => {
    const appId = randomUUID();
    const before = lookups();
    const tokens = Array.from({ length: 40 }, () => tokenOfUnknownApplication(appId, client.keyId));
    // At once (the first lookup is shared while it runs), then one after another.
    const answers = await Promise.all(tokens.slice(0, 20).map((token) => readAccount(t, token)));
    for (const token of tokens.slice(20)) answers.push(await readAccount(t, token));
    // The same application in upper case, and with other key ids.
    answers.push(await readAccount(t, tokenOfUnknownApplication(appId.toUpperCase(), client.keyId)));
    for (let i = 0; i < 20; i++) answers.push(await readAccount(t, tokenOfUnknownApplication(appId)));
    answers.forEach(expectUnauthorized);
    expect(lookups()).toBe(before + 1);
  });

  it('a key its application never had: one lookup for every token naming it, the same 401', async () => {
    const stranger = newKeyPair(); // signs properly, under its own thumbprint: only the registration is missing
    const unregistered = {
      ...client,
      keyId: (await parsePublicKey(stranger.publicPem)).keyId,
      key: stranger,
    };
    const before = lookups();
    const tokens = await Promise.all(
      Array.from({ length: 40 }, () => subjectToken(unregistered, randomSubject())),
    );
    const answers = await Promise.all(tokens.slice(0, 20).map((token) => readAccount(t, token)));
    for (const token of tokens.slice(20)) answers.push(await readAccount(t, token));
    answers.forEach(expectUnauthorized);
    expect(lookups()).toBe(before + 1);
    // The application's own key is not refused with it.
    expect((await readAccount(t, await subjectToken(client, randomSubject()))).status).toBe(404);
  });

  it('a kid that cannot be a key id (not a thumbprint) costs no lookup', async () => {
    const before = lookups();
    for (const kid of ['no-such-key-id', 'x'.repeat(2000), `${client.keyId}=`]) {
      expectUnauthorized(
        await readAccount(t, await subjectToken(client, randomSubject(), { header: { kid } })),
      );
    }
    expect(lookups()).toBe(before);
  });

  it('a revoked key: refused at once, then one lookup for every token naming it', async () => {
    const second = newKeyPair();
    const added = await t.app.get(AppsService).addKey(client.appId, second.publicPem, cliActor('test'));
    const viaSecond = { ...client, keyId: added.keyId, key: second };
    const verified = await subjectToken(viaSecond, randomSubject());
    expect((await readAccount(t, verified)).status).toBe(404);

    await t.app.get(AppsService).revokeKey(client.appId, added.keyId, cliActor('test'));
    const before = lookups();
    expectUnauthorized(await readAccount(t, verified));
    for (let i = 0; i < 20; i++)
      expectUnauthorized(await readAccount(t, await subjectToken(viaSecond, randomSubject())));
    expect(lookups()).toBe(before + 1);
  });

  it('a key added in this process after a refused try works at once', async () => {
    const third = newKeyPair();
    const viaThird = { ...client, keyId: (await parsePublicKey(third.publicPem)).keyId, key: third };
    expectUnauthorized(await readAccount(t, await subjectToken(viaThird, randomSubject())));
    await t.app.get(AppsService).addKey(client.appId, third.publicPem, cliActor('test'));
    expect((await readAccount(t, await subjectToken(viaThird, randomSubject()))).status).toBe(404);
  });

  it(`keeps at most ${CAPACITY} unknown names, the oldest going first, and never the verified tokens`, async () => {
    const verified = await subjectToken(client, randomSubject());
    expect((await readAccount(t, verified)).status).toBe(404);

    const appIds = Array.from({ length: CAPACITY + 1 }, () => randomUUID());
    const before = lookups();
    // The flood goes straight to the lookup the bearer strategy makes (through HTTP it takes four times as long,
    // and the checks below, through HTTP, would then depend on the machine's speed).
    const apps = t.app.get(AppsService);
    await inParallel(appIds, 16, async (appId) => {
      expect(await apps.findActiveKey(appId, randomKeyId())).toBeUndefined();
    });
    expect(lookups()).toBe(before + CAPACITY + 1);

    // The newest names are still known to name nothing; the oldest was let go, and is looked up again.
    const afterFlood = lookups();
    for (const appId of appIds.slice(-100))
      expectUnauthorized(await readAccount(t, tokenOfUnknownApplication(appId)));
    expect(lookups()).toBe(afterFlood);
    expectUnauthorized(await readAccount(t, tokenOfUnknownApplication(appIds[0])));
    expect(lookups()).toBe(afterFlood + 1);

    // The token that verified before the flood is still served from the verified-token cache: no lookup.
    expect((await readAccount(t, verified)).status).toBe(404);
    expect(lookups()).toBe(afterFlood + 1);
  });
});

describe('a key added by `apps add-key` (another process) after a refused try', () => {
  const windowMs = 2000;
  let t: TestApp;
  let keyDir: string;

  beforeAll(async () => {
    t = await startTestApp({ env: { AUTH_CACHE_MS: String(windowMs) } });
    keyDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-unknown-keys-'));
  });
  afterAll(async () => {
    await t?.close();
    rmSync(keyDir, { recursive: true, force: true });
  });

  it('works once AUTH_CACHE_MS has passed since the refused lookup, however often it was tried meanwhile', async () => {
    const client = await registerClient(t.app, 'adds-a-key');
    const added = newKeyPair();
    const viaAdded = { ...client, keyId: (await parsePublicKey(added.publicPem)).keyId, key: added };

    expectUnauthorized(await readAccount(t, await subjectToken(viaAdded, randomSubject())));
    const refusedAt = Date.now(); // the refused lookup ran before this: its miss is kept until refusedAt + window at most

    const keyFile = path.join(keyDir, 'added.pem');
    writeFileSync(keyFile, added.publicPem);
    const cli = await runCli(t, ['apps', 'add-key', '--app-id', client.appId, '--public-key', keyFile]);
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual({ appId: client.appId, keyId: viaAdded.keyId });

    // Tries all through the window (a miss kept from its last try, not from its lookup, would never end).
    while (Date.now() < refusedAt + windowMs + 100) {
      const status = (await readAccount(t, await subjectToken(viaAdded, randomSubject()))).status;
      expect([401, 404]).toContain(status);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await readAccount(t, await subjectToken(viaAdded, randomSubject()))).status).toBe(404);
  });
});
