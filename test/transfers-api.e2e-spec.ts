import { randomUUID } from 'node:crypto';
import pg from 'pg';
import request from 'supertest';
import type { Principal } from '../src/common/auth/principal.js';
import { listStatement, type TransferListFilter } from '../src/modules/transfers/transfer-views.js';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import {
  allPages,
  bearer,
  expectNotFound,
  expectUnauthorized,
  expectValidation,
  type ValidationItem,
} from './support/identity.js';
import { preparedPlan, rowsRead, type PlanNode } from './support/plans.js';
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
import {
  createOwner,
  expectForbidden,
  openAccount,
  setBalance,
  UUID_V7,
  type AccountInfo,
} from './support/wallet.js';

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
      ['blank name (stored trimmed, it was "": decision 0091)', { name: '  ' }, 'counterParty.name'],
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
      for (const row of rows) for (const id of Object.values(row)) expect(id).toMatch(UUID_V7);
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
      // Its hold's journal entry (ledger_post) has a time-ordered id too (decision 0050).
      const [hold] = (await t.dataSource.query(
        `SELECT id::text AS id FROM journal_entries WHERE reference = $1 AND kind = 'TRANSFER_HOLD'`,
        [external.body.uuid],
      )) as { id: string }[];
      expect(hold.id).toMatch(UUID_V7);

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

    it('GET /v1/wallet/transactions/all: from and to take a date or a UTC date-time that exists; anything else is 400 at its name', async () => {
      for (const value of [
        '2026-01-31',
        '2026-01-31T23:59Z',
        '2026-01-31T23:59:59Z',
        '2026-01-31T23:59:59.123Z',
      ])
        for (const name of ['from', 'to'])
          expect({
            value,
            status: (await get(`/v1/wallet/transactions/all?${name}=${value}`)).status,
          }).toEqual({
            value,
            status: 200,
          });
      // Each of these answered 500 (an invalid Date reached PostgreSQL), or was read as another day.
      for (const value of [
        '2024-13-45',
        '2024-02-30',
        '2023-02-29',
        '2024-01-01T99:99Z',
        '2024-01-01T24:00Z',
        '2024-01-01T10Z',
        '2024-01-01T10:00',
      ])
        for (const name of ['from', 'to'])
          expect({
            value,
            items: expectValidation(await get(`/v1/wallet/transactions/all?${name}=${value}`)),
          }).toEqual({
            value,
            items: [{ path: name, message: `${name} must be an ISO date`, type: 'invalid' }],
          });
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

  // TransferViews.list runs named statements: after five calls a connection may keep a generic plan, planned
  // without the parameters' values (decision 0048). On one application with a long, skewed history, each shape's
  // generic plan must read about what the custom plan for the values reads: no sequential scan, no parallel plan,
  // a rare status through the partial index of transfers in flight (a literal), a page through the keyset index.
  describe('lists as named statements: generic plans on a skewed history', () => {
    const BULK = 30_000;
    let lists: TestClient;
    let big: AccountInfo & { ownerId: string };
    let small: AccountInfo & { ownerId: string };
    let db: pg.Client;

    beforeAll(async () => {
      lists = await registerClient(t.app, 'transfers-api-lists');
      const listsToken = await accessToken(t.http, lists);
      const openIn = async () => {
        const ownerId = await createOwner(t.http, listsToken);
        return { ...(await openAccount(t.http, listsToken, lists.appId, ownerId)), ownerId };
      };
      big = await openIn();
      small = await openIn();
      // BULK rows on one account over 30 days (ten of them INICIADO, the rest ACREDITADO; deposits and
      // withdrawals alternating), twenty on the other: list rows only, as the list reads them.
      await t.dataSource.query(
        `INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name,
                                counterparty_tax_id, counterparty_identifier_type, counterparty_identifier, amount,
                                currency, concept, created_at)
         SELECT gen_random_uuid(), $1, CASE WHEN i <= $4 THEN $2 ELSE $3 END::uuid,
                CASE WHEN i % 2 = 0 THEN 'DEPOSIT' ELSE 'WITHDRAW' END,
                CASE WHEN i % ($4 / 10) = 0 THEN 'INICIADO' ELSE 'ACREDITADO' END, 'EXTERNAL', 'Bulk',
                '20123456786', 'CBU', '0110599520000001234561', 1, 'ARS', 'VAR',
                now() - make_interval(secs => i * 86.4)
           FROM generate_series(1, $4 + 20) AS i`,
        [lists.appId, big.uuid, small.uuid, BULK],
      );
      await t.dataSource.query('ANALYZE transfers');
      await t.dataSource.query('ANALYZE wallet_accounts');
      db = new pg.Client({ connectionString: t.databaseUrl });
      await db.connect();
    }, 120_000);
    afterAll(() => db?.end());

    /** The plan of the statement the list would run, as PostgreSQL plans it in `mode`, run. */
    const planOf = async (
      principal: Principal,
      filter: TransferListFilter,
      mode: 'force_custom_plan' | 'force_generic_plan',
      before?: { createdAt: Date; id: string },
    ): Promise<{ nodes: PlanNode[]; transferRowsRead: number }> => {
      const { text, values } = listStatement(principal, filter, 101, before);
      const nodes = await preparedPlan(db, text, values, mode);
      return { nodes, transferRowsRead: rowsRead(nodes, 'transfers') };
    };

    it('every shape: the generic plan reads about what the custom plan reads, no sequential scan of transfers, no parallel plan', async () => {
      const app: Principal = { kind: 'client', appId: lists.appId };
      const tenDaysAgo = new Date(Date.now() - 10 * 86_400_000);
      const shapes: [string, Principal, TransferListFilter, { createdAt: Date; id: string }?][] = [
        ['application', app, {}],
        ['application, a page further', app, {}, { createdAt: tenDaysAgo, id: randomUUID() }],
        ['application, a rare status', app, { status: 'INICIADO' }],
        ['application, the common status', app, { status: 'ACREDITADO' }],
        ['application, a movement type', app, { movementType: 'DEPOSIT' }],
        [
          'application, one hour ten days ago',
          app,
          { from: tenDaysAgo.toISOString(), to: new Date(tenDaysAgo.getTime() + 3_600_000).toISOString() },
        ],
        ['application, since ten days ago', app, { from: tenDaysAgo.toISOString() }],
        ['application, the small account', app, { accountId: small.uuid }],
        ['application, the big account', app, { accountId: big.uuid }],
        // A user token lists one of its accounts (GET /v1/wallet/accounts/{uuid}/transactions).
        [
          'the small owner, its account',
          { kind: 'subject', appId: lists.appId, subject: small.ownerId },
          { accountId: small.uuid },
        ],
        [
          'the big owner, its account',
          { kind: 'subject', appId: lists.appId, subject: big.ownerId },
          { accountId: big.uuid },
        ],
        [
          'the big owner, its account, a rare status',
          { kind: 'subject', appId: lists.appId, subject: big.ownerId },
          { accountId: big.uuid, status: 'INICIADO' },
        ],
      ];
      const read: Record<string, [number, number]> = {};
      for (const [label, principal, filter, before] of shapes) {
        const custom = await planOf(principal, filter, 'force_custom_plan', before);
        const generic = await planOf(principal, filter, 'force_generic_plan', before);
        // (The test's other tables are a few rows each: a sequential scan of them is the right plan.)
        const wrong = generic.nodes
          .filter(
            (node) =>
              node['Node Type'].startsWith('Gather') ||
              (node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'transfers'),
          )
          .map((node) => node['Node Type']);
        expect([label, wrong]).toStrictEqual([label, []]);
        read[label] = [custom.transferRowsRead, generic.transferRowsRead];
      }
      for (const [label, [custom, generic]] of Object.entries(read)) {
        expect([label, generic <= 2 * custom + 50]).toStrictEqual([label, true]);
      }
      // A page reads a page; a rare status comes through the partial index of transfers in flight, not by
      // walking the application's 30,000 rows; an account's rows through its own index (the small account's
      // twenty are the application's oldest).
      expect(read['application'][1]).toBeLessThanOrEqual(101);
      expect(read['application, a rare status'][1]).toBeLessThan(100);
      expect(read['the small owner, its account'][1]).toBeLessThanOrEqual(20);
      expect(read['the big owner, its account'][1]).toBeLessThanOrEqual(101);
    }, 60_000);

    it('a failure status the application rarely has reads those rows, not its whole history (decision 0075)', async () => {
      const rare = await registerClient(t.app, 'transfers-api-rare');
      const rareToken = await accessToken(t.http, rare);
      const account = await openAccount(t.http, rareToken, rare.appId, await createOwner(t.http, rareToken));
      // 5,000 withdrawals credited, and three deposits refused, the oldest rows.
      await t.dataSource.query(
        `INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name,
                                counterparty_tax_id, counterparty_identifier_type, counterparty_identifier, amount,
                                currency, concept, created_at)
         SELECT gen_random_uuid(), $1, $2, CASE WHEN i > 5000 THEN 'DEPOSIT' ELSE 'WITHDRAW' END,
                CASE WHEN i > 5000 THEN 'ERROR_DATOS' ELSE 'ACREDITADO' END, 'EXTERNAL', 'Bulk',
                '20123456786', 'CBU', '0110599520000001234561', 1, 'ARS', 'VAR', now() - make_interval(secs => i * 60)
           FROM generate_series(1, 5003) AS i`,
        [rare.appId, account.uuid],
      );
      await t.dataSource.query('ANALYZE transfers');
      const app: Principal = { kind: 'client', appId: rare.appId };
      const read: Record<string, number[]> = {};
      for (const [label, filter] of [['a failure status', { status: 'ERROR_DATOS' }]] as [
        string,
        TransferListFilter,
      ][]) {
        read[label] = [];
        for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
          read[label].push((await planOf(app, filter, mode)).transferRowsRead);
        }
      }
      // Three rows (and the index's end); before, the application's 5,003 rows were read and thrown away. A movement
      // type has no index of its own (decision 0075): an entry on every transfer written, on the money path.
      expect(read).toStrictEqual({ 'a failure status': [3, 3] });
      const listed = await get(
        '/v1/wallet/transactions/all?status=ERROR_DATOS&movementType=DEPOSIT',
        rareToken,
      );
      expect(
        (listed.body as { type: string; status: string }[]).map((item) => [item.type, item.status]),
      ).toStrictEqual(Array.from({ length: 3 }, () => ['DEPOSIT', 'ERROR_DATOS']));
    }, 60_000);

    it('through the API, to the application and to the owner: pages of every size are whole and in order whatever LIMIT the statement fetched', async () => {
      const listsToken = await accessToken(t.http, lists);
      const path = `/v1/wallet/accounts/${small.uuid}/transactions`;
      const everything = (await get(`${path}?limit=500`, listsToken)).body as { uuid: string }[];
      expect(everything).toHaveLength(20);
      const owner = await subjectToken(lists, small.ownerId);
      for (const size of [1, 3, 7, 10, 19, 20]) {
        for (const as of [listsToken, owner]) {
          const { pages } = await allPages<{ uuid: string }>(t.http, path, as, size);
          expect(pages.every((page) => page.length <= size)).toBe(true);
          expect(pages.flat().map((item) => item.uuid)).toStrictEqual(everything.map((item) => item.uuid));
        }
      }
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
