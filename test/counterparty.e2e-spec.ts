import { readFileSync } from 'node:fs';
import request from 'supertest';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import { bearer, userBody } from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { openAccount } from './support/wallet.js';

interface DirectoryEntry {
  number: string;
  alias: string;
  titulares: string;
  entidadBancaria: string;
  tipo: string;
  moneda: string;
}

const directory = (
  JSON.parse(readFileSync('config/counterparty-directory.json', 'utf8')) as { accounts: DirectoryEntry[] }
).accounts;

describe('POST /v1/counterparty', () => {
  let t: TestApp;
  let client: TestClient;
  let token: string;
  let account: { uuid: string; cvu: string; alias: string };
  let ownerId: string;

  const lookup = (destinatario: unknown, as = token) =>
    request(t.http).post('/v1/counterparty').set('Authorization', bearer(as)).send({ destinatario });

  beforeAll(async () => {
    t = await startTestApp({ env: { ENTITY_NAME: 'Billetera Test' } });
    client = await registerClient(t.app);
    token = await accessToken(t.http, client);
    const body = userBody();
    body.firstName = 'Lucía';
    body.lastName = 'Martínez';
    ownerId = (await request(t.http).post('/v1/users').set('Authorization', bearer(token)).send(body)).body
      .uuid;
    account = await openAccount(t.http, token, client.appId, ownerId);
  });
  afterAll(() => t.close());

  it("finds this service's account by CVU and by alias (any case)", async () => {
    const expected = {
      cvu: account.cvu,
      cbu: '',
      tipo: 'CA',
      titulares: 'Lucía Martínez',
      entidadBancaria: 'Billetera Test',
      moneda: 'ARS',
    };
    for (const destinatario of [account.cvu, account.alias, account.alias.toUpperCase()]) {
      const response = await lookup(destinatario);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual(expected);
    }
  });

  it("finds this service's accounts for any application (every CVU here is a destination)", async () => {
    const other = await registerClient(t.app, 'another-app');
    const response = await lookup(account.alias, await accessToken(t.http, other));
    expect(response.status).toBe(200);
    expect(response.body.cvu).toBe(account.cvu);
  });

  it("finds other institutions' accounts in the directory, by CBU/CVU and by alias", async () => {
    for (const entry of directory) {
      const isCvu = entry.number.startsWith('000');
      const expected = {
        cvu: isCvu ? entry.number : '',
        cbu: isCvu ? '' : entry.number,
        tipo: entry.tipo,
        titulares: entry.titulares,
        entidadBancaria: entry.entidadBancaria,
        moneda: entry.moneda,
      };
      expect((await lookup(entry.number)).body).toStrictEqual(expected);
      expect((await lookup(entry.alias)).body).toStrictEqual(expected);
    }
  });

  it('finds an alias of digits only (6 to 20 of them are an alias, not an account number)', async () => {
    const digits = `${Date.now()}`.slice(-9);
    const set = await request(t.http)
      .patch(`/v1/wallet/accounts/${account.uuid}/alias`)
      .set('Authorization', bearer(token))
      .send({ newAlias: digits });
    expect(set.status).toBe(200);
    const response = await lookup(digits);
    expect(response.status).toBe(200);
    expect(response.body.cvu).toBe(account.cvu);
    const unknown = await lookup('98765432109876543210');
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toStrictEqual({ item: '98765432109876543210' });
    account.alias = digits;
  });

  it('answers an unknown alias or number with 404 naming it', async () => {
    for (const destinatario of ['nadie.sabe.nada', '0110599590000009999997']) {
      const response = await lookup(destinatario);
      expect(response.status).toBe(404);
      expect(response.body).toStrictEqual({
        name: 'NotFoundError',
        message: expect.any(String),
        detail: { item: destinatario },
      });
    }
  });

  it('refuses malformed input with 400 at destinatario', async () => {
    const badCheckDigit = `${account.cvu.slice(0, 21)}${(Number(account.cvu[21]) + 1) % 10}`;
    for (const destinatario of [
      '12345',
      '0'.repeat(21),
      '0'.repeat(23),
      badCheckDigit,
      'ab',
      'has spaces here',
      'ñandú.rio.mar',
      '',
    ]) {
      const response = await lookup(destinatario);
      expect(response.status).toBe(400);
      expect(response.body.detail.items[0]).toMatchObject({ path: 'destinatario' });
    }
    expect((await lookup(12345)).status).toBe(400);
    const extra = await request(t.http)
      .post('/v1/counterparty')
      .set('Authorization', bearer(token))
      .send({ destinatario: account.alias, other: 1 });
    expect(extra.body.detail.items).toStrictEqual([
      { path: 'other', message: expect.any(String), type: 'invalid' },
    ]);
  });

  it('does not find a deleted account', async () => {
    await request(t.http)
      .delete(`/v1/wallet/accounts/${account.uuid}`)
      .set('Authorization', bearer(token))
      .expect(200);
    expect((await lookup(account.cvu)).status).toBe(404);
    expect((await lookup(account.alias)).status).toBe(404);
  });

  it('is for client credentials only', async () => {
    expect((await lookup(account.alias, await subjectToken(client, ownerId))).status).toBe(401);
    expect(
      (await request(t.http).post('/v1/counterparty').send({ destinatario: account.alias })).status,
    ).toBe(401);
  });
});
