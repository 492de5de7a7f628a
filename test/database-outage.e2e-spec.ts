import request from 'supertest';
import { accessToken, registerClient } from './support/auth.js';
import { createTestDatabase } from './support/database.js';
import { bearer } from './support/identity.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { balanceOf, postTransfer, transferBody } from './support/transfers.js';
import { createOwner, openAccount, setBalance } from './support/wallet.js';

/** A one-pixel PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/**
 * The database out of reach while the API runs (its connections reset, new ones refused, through a TCP proxy in
 * front of the real server): requests answer 503 with the interface's error body, a trackingId and Retry-After,
 * not a 500 as if the request had failed; once the database is back, the same requests succeed.
 */
describe('the database out of reach', () => {
  let database: { url: string; drop: () => Promise<void> };
  let proxy: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    database = await createTestDatabase();
    const direct = new URL(database.url);
    proxy = await startTcpProxy(Number(direct.port));
    const proxied = new URL(database.url);
    proxied.port = String(proxy.port);
    t = await startTestApp({ databaseUrl: proxied.toString() });
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('answers 503 ServiceUnavailableError with a trackingId and Retry-After, then serves again', async () => {
    const client = await registerClient(t.app, 'outage');
    const token = await accessToken(t.http, client);
    const owner = await createOwner(t.http, token);
    const account = await openAccount(t.http, token, client.appId, owner);
    await setBalance(t.http, token, account.uuid, 100);
    const other = await openAccount(t.http, token, client.appId, await createOwner(t.http, token));
    const transfer = transferBody(account.uuid, other.cvu, 10); // to an account of this service: internal

    await proxy.cut();
    const answers = [
      await request(t.http).get('/v1/users/all').set('Authorization', bearer(token)),
      await request(t.http)
        .get(`/v1/wallet/accounts/${account.uuid}/balance`)
        .set('Authorization', bearer(token)),
      await postTransfer(t.http, token, transfer, 'outage-key-1'),
    ];
    for (const answer of answers) {
      expect({ status: answer.status, body: answer.body as unknown }).toEqual({
        status: 503,
        body: {
          name: 'ServiceUnavailableError',
          message: 'A service this request needs is not available; try again shortly',
          detail: { trackingId: expect.any(String) },
        },
      });
      expect(answer.headers['retry-after']).toBe('1');
    }

    await proxy.restore();
    const again = await postTransfer(t.http, token, transfer, 'outage-key-1');
    expect(again.status).toBe(201);
    expect(await balanceOf(t.http, token, account.uuid)).toBe(90); // the transfer, once
  });

  it('keeps a document whose COMMIT was carried out but its answer lost, and answers 201', async () => {
    const client = await registerClient(t.app, 'lost commit');
    const token = await accessToken(t.http, client);
    const owner = await createOwner(t.http, token);
    // PostgreSQL's simple Query message for COMMIT: 'Q', the length (4 + 7), "COMMIT" and its NUL.
    proxy.loseAnswerTo(Buffer.from('Q\0\0\0\x0bCOMMIT\0', 'latin1'));
    const response = await request(t.http)
      .post(`/v1/users/${owner}/documents`)
      .set('Authorization', bearer(token))
      .field('documentType', 'DNI_FRONT')
      .attach('file', PNG, 'front.png');
    expect(response.status).toBe(201);
    const content = await request(t.http)
      .get(`/v1/documents/${response.body.uuid}/content`)
      .set('Authorization', bearer(token));
    expect(content.status).toBe(200);
    expect(Buffer.compare(content.body as Buffer, PNG)).toBe(0);
    const rows = (await t.dataSource.query('SELECT count(*)::int AS n FROM documents WHERE owner_id = $1', [
      owner,
    ])) as { n: number }[];
    expect(rows[0].n).toBe(1);
  });
});
