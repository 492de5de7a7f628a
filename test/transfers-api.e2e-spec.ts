import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import {
  allPages,
  bearer,
  expectNotFound,
  expectUnauthorized,
  expectValidation,
  type ValidationItem,
} from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import {
  counterParty,
  DIRECTORY,
  moneyRowCounts,
  postTransfer,
  setStatus,
  TRANSACTION_INFO_KEYS,
  transferBody,
} from './support/transfers.js';
import { createOwner, expectForbidden, openAccount, setBalance, type AccountInfo } from './support/wallet.js';

const paths = (items: ValidationItem[]) => items.map((item) => item.path);

/** Validation, authorization and the reads of transfers (no worker: external transfers stay INICIADO). */
describe('transfers: API (real database)', () => {
  let t: TestApp;
  let client: TestClient;
  let token: string;
  let sender: AccountInfo & { ownerId: string };
  let receiver: AccountInfo & { ownerId: string };

  const open = async (balance = 0): Promise<AccountInfo & { ownerId: string }> => {
    const ownerId = await createOwner(t.http, token);
    const account = await openAccount(t.http, token, client.appId, ownerId);
    if (balance > 0) await setBalance(t.http, token, account.uuid, balance);
    return { ...account, ownerId };
  };
  const send = (body: unknown, as = token) => postTransfer(t.http, as, body);
  const get = (path: string, as = token) => request(t.http).get(path).set('Authorization', bearer(as));

  beforeAll(async () => {
    t = await startTestApp();
    client = await registerClient(t.app, 'transfers-api');
    token = await accessToken(t.http, client);
    sender = await open(10_000);
    receiver = await open();
  });
  afterAll(() => t.close());

  describe('POST /v1/wallet/transactions validation', () => {
    const valid = () => transferBody(sender.uuid, receiver.cvu, 10);
    const withParty = (patch: Record<string, unknown>) => ({
      ...valid(),
      counterParty: { ...valid().counterParty, ...patch },
    });

    it('unknown accountUUID: 400 notfound at accountUUID', async () => {
      const items = expectValidation(await send({ ...valid(), accountUUID: randomUUID() }));
      expect(items).toStrictEqual([{ path: 'accountUUID', type: 'notfound', message: expect.any(String) }]);
    });

    it.each([
      ['bad check digits', { identifier: '0110599590000001234567' }, 'counterParty.identifier'],
      ['CBU type for a 000 number', { identifierType: 'CBU' }, 'counterParty.identifierType'],
      ['cValue not a tax id', { cValue: '20123456780' }, 'counterParty.cValue'],
      ['unknown property', { extra: 1 }, 'counterParty.extra'],
    ])('counterParty %s: 400 at its path', async (_name, patch, path) => {
      expect(paths(expectValidation(await send(withParty(patch))))).toContain(path);
    });

    it('bad check digits in either block of a CBU or CVU, WITHDRAW or DEPOSIT: 400 at counterParty.identifier, nothing written', async () => {
      const rows = async () => ({
        ...(await moneyRowCounts(t.dataSource)),
        keys: (
          (await t.dataSource.query(`SELECT count(*)::int AS n FROM idempotency_keys`)) as { n: number }[]
        )[0].n,
      });
      const before = await rows();
      const bump = (digits: string, at: number) =>
        `${digits.slice(0, at)}${(Number(digits[at]) + 1) % 10}${digits.slice(at + 1)}`;
      const cbu = DIRECTORY.nacion.number;
      for (const identifier of [bump(cbu, 7), bump(cbu, 21), bump(receiver.cvu, 7), bump(receiver.cvu, 21)]) {
        for (const movementType of ['WITHDRAW', 'DEPOSIT'] as const) {
          const body = transferBody(sender.uuid, identifier, 10, {
            movementType,
            counterParty: counterParty(identifier, DIRECTORY.nacion.cuit),
          });
          const response = await postTransfer(t.http, token, body, randomUUID());
          expect(response.status).toBe(400);
          expect(response.body).toStrictEqual({
            name: 'ValidationError',
            message: expect.any(String),
            detail: {
              items: [
                {
                  path: 'counterParty.identifier',
                  type: 'invalid',
                  message: expect.stringMatching(/check digits/),
                },
              ],
            },
          });
        }
      }
      expect(await rows()).toStrictEqual(before);
    });

    it.each([
      ['below 1', 0.5],
      ['three decimals', 10.005],
      ['not a number', '10'],
    ])('amount %s: 400 at amount', async (_name, amount) => {
      expect(paths(expectValidation(await send({ ...valid(), amount })))).toContain('amount');
    });

    it('concept outside the enum and unknown top-level properties: 400', async () => {
      expect(paths(expectValidation(await send({ ...valid(), concept: 'XYZ' })))).toContain('concept');
      expect(paths(expectValidation(await send({ ...valid(), extra: true })))).toContain('extra');
    });

    it('DEPOSIT pulled from an account of this service: 400 at movementType', async () => {
      const items = expectValidation(await send({ ...valid(), movementType: 'DEPOSIT' }));
      expect(paths(items)).toEqual(['movementType']);
    });

    it('a transfer to the same account: 400', async () => {
      expectValidation(await send(transferBody(sender.uuid, sender.cvu, 10)));
    });

    it('nothing was written by any of the refusals above', async () => {
      const [row] = (await t.dataSource.query(`SELECT count(*)::int AS n FROM transfers`)) as { n: number }[];
      expect(row.n).toBe(0);
    });
  });

  describe('account state', () => {
    it('sending account INACTIVE: 403 INVALID_STATE; receiving account INACTIVE: 403', async () => {
      const from = await open(100);
      const to = await open();
      await setStatus(t.http, token, from.uuid, 'INACTIVE');
      expectForbidden(await send(transferBody(from.uuid, to.cvu, 10)), 'INVALID_STATE');
      await setStatus(t.http, token, from.uuid, 'ACTIVE');
      await setStatus(t.http, token, to.uuid, 'INACTIVE');
      expectForbidden(await send(transferBody(from.uuid, to.cvu, 10)), 'INVALID_STATE');
    });
  });

  describe('reads', () => {
    let transferId: string;

    beforeAll(async () => {
      const response = await send(transferBody(sender.uuid, receiver.cvu, 10));
      if (response.status !== 201) throw new Error(`transfer failed: ${response.status} ${response.text}`);
      transferId = (response.body as { uuid: string }).uuid;
    });

    it('GET /v1/wallet/transactions/{uuid}: TransactionInfo to the app and to the owner; 404 to others', async () => {
      const response = await get(`/v1/wallet/transactions/${transferId}`);
      expect(response.status).toBe(200);
      expect(Object.keys(response.body as object).sort()).toEqual(TRANSACTION_INFO_KEYS);
      expect(response.body).toMatchObject({
        uuid: transferId,
        type: 'WITHDRAW',
        status: 'ACREDITADO',
        amount: 10,
        currency: 'ARS',
      });
      const owner = await subjectToken(client, sender.ownerId);
      expect((await get(`/v1/wallet/transactions/${transferId}`, owner)).body).toStrictEqual(response.body);
      const stranger = await subjectToken(client, receiver.ownerId);
      expectNotFound(await get(`/v1/wallet/transactions/${transferId}`, stranger), transferId);
      const clientB = await registerClient(t.app, 'transfers-api-b');
      const tokenB = await accessToken(t.http, clientB);
      expectNotFound(await get(`/v1/wallet/transactions/${transferId}`, tokenB), transferId);
    });

    it("an internal transfer's new rows have time-ordered ids (UUID version 7: decision 0042)", async () => {
      const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
      const second = await send(transferBody(sender.uuid, receiver.cvu, 1));
      expect(second.status).toBe(201);
      const secondId = (second.body as { uuid: string }).uuid;
      const rows = (await t.dataSource.query(
        `SELECT t.id::text AS id, t.linked_transfer_id::text AS deposit, e.id::text AS entry, w.id::text AS event
           FROM transfers t
           JOIN journal_entries e ON e.reference = t.id::text
           JOIN webhook_events w ON w.subject = t.linked_transfer_id::text
          WHERE t.id = ANY($1::uuid[]) ORDER BY t.created_at, t.id`,
        [[transferId, secondId]],
      )) as { id: string; deposit: string; entry: string; event: string }[];
      expect(rows.map((row) => row.id)).toEqual([transferId, secondId]);
      for (const row of rows) for (const id of Object.values(row)) expect(id).toMatch(V7);
      // The leading 48 bits are the creation time in milliseconds: a later transfer's id sorts after.
      expect(secondId.replace(/-/g, '').slice(0, 12) >= transferId.replace(/-/g, '').slice(0, 12)).toBe(true);
      // And the id is accepted wherever an id is read.
      expect((await get(`/v1/wallet/transactions/${secondId}`)).status).toBe(200);
      expect((await get(`/v1/wallet/transactions/${rows[1].deposit}`)).status).toBe(200);
    });

    it('GET /v1/wallet/transactions/all: CC only, newest first, pages, filters', async () => {
      const from = await open(1000);
      const to = await open();
      for (let i = 0; i < 5; i++)
        expect((await send(transferBody(from.uuid, to.cvu, 1 + i))).status).toBe(201);
      const external = await send(
        transferBody(from.uuid, DIRECTORY.nacion.number, 7, {
          counterParty: counterParty(DIRECTORY.nacion.number, DIRECTORY.nacion.cuit),
        }),
      );
      expect(external.body.status).toBe('INICIADO');

      expectUnauthorized(await get('/v1/wallet/transactions/all', await subjectToken(client, from.ownerId)));
      const { pages, cursors } = await allPages<{ uuid: string; createdAt: string }>(
        t.http,
        '/v1/wallet/transactions/all',
        token,
        3,
      );
      expect(pages.length).toBeGreaterThan(2);
      expect(cursors.length).toBe(pages.length - 1);
      const all = pages.flat();
      const [{ n }] = (await t.dataSource.query(`SELECT count(*)::int AS n FROM transfers`)) as {
        n: number;
      }[];
      expect(all).toHaveLength(n);
      expect(new Set(all.map((item) => item.uuid)).size).toBe(n);
      const times = all.map((item) => item.createdAt);
      expect([...times].sort().reverse()).toEqual(times);

      const started = await get('/v1/wallet/transactions/all?status=INICIADO');
      expect((started.body as { uuid: string }[]).map((item) => item.uuid)).toEqual([external.body.uuid]);
      const deposits = (await get('/v1/wallet/transactions/all?movementType=DEPOSIT')).body as {
        type: string;
      }[];
      expect(deposits.length).toBeGreaterThan(0);
      expect(deposits.every((item) => item.type === 'DEPOSIT')).toBe(true);
      const future = new Date(Date.now() + 3_600_000).toISOString();
      expect((await get(`/v1/wallet/transactions/all?from=${future}`)).body).toEqual([]);
      expect(((await get(`/v1/wallet/transactions/all?to=${future}`)).body as unknown[]).length).toBe(
        Math.min(n, 50),
      );
      expect(expectValidation(await get('/v1/wallet/transactions/all?status=NOPE')).length).toBeGreaterThan(
        0,
      );
    });

    it('GET /v1/wallet/accounts/{uuid}/transactions: scoped like the account', async () => {
      const list = await get(`/v1/wallet/accounts/${receiver.uuid}/transactions`);
      expect(list.status).toBe(200);
      const items = list.body as { type: string; account: { cvu: string } }[];
      expect(items.length).toBeGreaterThan(0);
      expect(items.every((item) => item.type === 'DEPOSIT' && item.account.cvu === receiver.cvu)).toBe(true);
      const owner = await subjectToken(client, receiver.ownerId);
      expect((await get(`/v1/wallet/accounts/${receiver.uuid}/transactions`, owner)).body).toStrictEqual(
        list.body,
      );
      const stranger = await subjectToken(client, sender.ownerId);
      expect((await get(`/v1/wallet/accounts/${receiver.uuid}/transactions`, stranger)).status).toBe(404);
      const clientB = await registerClient(t.app, 'transfers-api-c');
      const tokenB = await accessToken(t.http, clientB);
      expect((await get(`/v1/wallet/accounts/${receiver.uuid}/transactions`, tokenB)).status).toBe(404);
    });
  });

  it("a user token transfers only from its own accounts (another's: 400 notfound at accountUUID)", async () => {
    const ownerToken = await subjectToken(client, sender.ownerId);
    expect((await send(transferBody(sender.uuid, receiver.cvu, 1), ownerToken)).status).toBe(201);
    const other = await subjectToken(client, receiver.ownerId);
    const items = expectValidation(await send(transferBody(sender.uuid, receiver.cvu, 1), other));
    expect(items).toStrictEqual([{ path: 'accountUUID', type: 'notfound', message: expect.any(String) }]);
  });
});
