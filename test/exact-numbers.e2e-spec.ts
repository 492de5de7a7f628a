import request from 'supertest';
import { accessToken, registerClient, type TestClient } from './support/auth.js';
import {
  bearer,
  companyBody,
  expectRefusedWithoutWrites,
  expectValidation,
  ownerRoutes,
  type ValidationItem,
} from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { balanceOf, moneyRowCounts, transferBody } from './support/transfers.js';
import { createOwner, openAccount, setBalance, type AccountInfo } from './support/wallet.js';

/**
 * Decision 0099: a JSON number literal that a JavaScript number cannot hold exactly is a 400 at its path, before
 * anything is written; exact literals (0.30000000000000004 is one) take their usual path. Bodies are sent as
 * text, as a client writes them (supertest's JSON.stringify would round them first).
 */
describe('request bodies: numbers JSON.parse would round are refused (real database)', () => {
  let t: TestApp;
  let client: TestClient;
  let token: string;
  let sender: AccountInfo;
  let receiver: AccountInfo;

  const open = async (balance = 0): Promise<AccountInfo> => {
    const ownerId = await createOwner(t.http, token);
    const account = await openAccount(t.http, token, client.appId, ownerId);
    if (balance > 0) await setBalance(t.http, token, account.uuid, balance);
    return account;
  };
  const postText = (path: string, text: string) =>
    request(t.http)
      .post(path)
      .set('Authorization', bearer(token))
      .set('Content-Type', 'application/json')
      .send(text);
  /** A transfer body from sender to receiver's CVU whose amount is `literal` as written. */
  const transferText = (literal: string) => {
    const text = JSON.stringify(transferBody(sender.uuid, receiver.cvu, 7777));
    expect(text).toContain('"amount":7777');
    return text.replace('"amount":7777', `"amount":${literal}`);
  };
  const balances = async () => [
    await balanceOf(t.http, token, sender.uuid),
    await balanceOf(t.http, token, receiver.uuid),
  ];
  const only = (items: ValidationItem[]) => {
    expect(items).toHaveLength(1);
    return items[0];
  };

  beforeAll(async () => {
    t = await startTestApp();
    client = await registerClient(t.app, 'exact-numbers');
    token = await accessToken(t.http, client);
    sender = await open(1000);
    receiver = await open();
  });
  afterAll(() => t.close());

  describe('POST /v1/wallet/transactions', () => {
    it.each(['0.99999999999999999', '100.0000000000000001', '9007199254740993', '-1e400', '1e400'])(
      'amount %s: 400 at amount, no transfer written, balances unchanged',
      async (literal) => {
        const rowsBefore = await moneyRowCounts(t.dataSource);
        const balancesBefore = await balances();
        const response = await postText('/v1/wallet/transactions', transferText(literal));
        expect(only(expectValidation(response))).toStrictEqual({
          path: 'amount',
          type: 'invalid',
          message: literal.includes('e400')
            ? 'amount is out of the range of a number'
            : 'amount has more digits than a number can hold exactly',
        });
        expect(await moneyRowCounts(t.dataSource)).toStrictEqual(rowsBefore);
        expect(await balances()).toStrictEqual(balancesBefore);
      },
    );

    it.each(['0.30000000000000004', '1.0000000000000002'])(
      '%s is held exactly: refused by the money rule (decimals), not as a rounded number',
      async (literal) => {
        const rowsBefore = await moneyRowCounts(t.dataSource);
        const response = await postText('/v1/wallet/transactions', transferText(literal));
        expect(only(expectValidation(response))).toStrictEqual({
          path: 'amount',
          type: 'invalid',
          message: 'amount has more than 2 decimals for ARS',
        });
        expect(await moneyRowCounts(t.dataSource)).toStrictEqual(rowsBefore);
      },
    );

    it('names the path as the validation pipe names the same field (counterParty.x)', async () => {
      const withX = (literal: string) =>
        transferText('10').replace('"counterParty":{', `"counterParty":{"x":${literal},`);
      const unknown = only(expectValidation(await postText('/v1/wallet/transactions', withX('1'))));
      expect(unknown).toMatchObject({ path: 'counterParty.x', message: 'property x is not allowed' });
      const rounded = only(
        expectValidation(await postText('/v1/wallet/transactions', withX('0.99999999999999999'))),
      );
      expect(rounded).toMatchObject({ path: unknown.path, type: 'invalid' });
      expect(rounded.message).toBe('counterParty.x has more digits than a number can hold exactly');
    });

    it('a body with 22-digit CVU strings and a normal amount is unaffected: 201, the money moves', async () => {
      const [senderBefore, receiverBefore] = await balances();
      const text = transferText('12.50');
      expect(text).toContain(`"identifier":"${receiver.cvu}"`);
      const response = await postText('/v1/wallet/transactions', text);
      expect(response.status).toBe(201);
      expect(response.body).toMatchObject({ amount: { value: 12.5, currency: 'ARS' } });
      const [senderAfter, receiverAfter] = await balances();
      expect(senderAfter).toBeCloseTo(senderBefore - 12.5, 6);
      expect(receiverAfter).toBeCloseTo(receiverBefore + 12.5, 6);
    });
  });

  describe("a company's free-form KYC section", () => {
    const tables = ['company_kyc_data', 'kyc_history'];
    let companyId: string;
    const companies = ownerRoutes(
      () => t.http,
      '/v1/companies',
      () => token,
    );
    const newCompany = async (): Promise<string> => {
      const created = await companies.create(companyBody());
      expect(created.status).toBe(201);
      return (created.body as { uuid: string }).uuid;
    };

    beforeAll(async () => {
      companyId = await newCompany();
    });

    it.each([
      ['{"data":{"capital":{"acciones":[1000,12345678901234567890]}}}', 'data.capital.acciones[1]'],
      ['{"data":{"razonSocial":"Yerba Sur","ratio":0.1000000000000000000001}}', 'data.ratio'],
      [
        '{"data":{"socios":[{"nombre":"A \\"B\\" [C]","participacion":-1e400}]}}',
        'data.socios[0].participacion',
      ],
    ])('%s: 400 at %s, nothing written', async (text, path) => {
      const response = await expectRefusedWithoutWrites(t.dataSource, tables, () =>
        postText(`/v1/companies/${companyId}/kyc-data`, text),
      );
      const item = only(expectValidation(response));
      expect(item).toMatchObject({ path, type: 'invalid' });
    });

    it('exact numbers, however long, are stored as sent', async () => {
      const response = await postText(
        `/v1/companies/${await newCompany()}/kyc-data`,
        '{"data":{"cuitDigits":"30123456789012345678","big":1e23,"small":0.30000000000000004,"capital":100.00}}',
      );
      expect(response.status).toBe(201);
      expect((response.body as { datosBasicos: unknown }).datosBasicos).toStrictEqual({
        cuitDigits: '30123456789012345678',
        big: 1e23,
        small: 0.30000000000000004,
        capital: 100,
      });
    });
  });
});
