import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { periodsOf } from '../src/modules/wallet/periods.js';
import { subjectToken, type TestClient } from './support/auth.js';
import {
  bearer,
  byPath,
  countRows,
  expectNotFound,
  expectUnauthorized,
  expectValidation,
} from './support/identity.js';
import { commitRightAfterWrite } from './support/database.js';
import type { TestApp } from './support/test-app.js';
import { startWithTwoApplications } from './support/two-applications.js';
import { postTransfer, transferBody, UNLISTED_CBU } from './support/transfers.js';
import {
  ACCOUNT_KEYS,
  ALIAS,
  accountBody,
  createOwner,
  expectForbidden,
  expectIssuedCvu,
  ISO_DATE_TIME,
  limitsOf,
  openAccount,
  setBalance,
  UUID,
  type AccountInfo,
} from './support/wallet.js';

const BUENOS_AIRES = 'America/Argentina/Buenos_Aires';

interface Route {
  method: 'get' | 'post' | 'patch' | 'delete';
  suffix: string;
  policy: 'either' | 'cc';
  body?: object;
}

/** Every route under /v1/wallet/accounts/{uuid}, with a valid body where one is needed. */
const ACCOUNT_ROUTES: Route[] = [
  { method: 'get', suffix: '', policy: 'either' },
  { method: 'patch', suffix: '', policy: 'either', body: { name: 'Intruso' } },
  { method: 'delete', suffix: '', policy: 'either' },
  { method: 'patch', suffix: '/alias', policy: 'either', body: { newAlias: 'intruso.alias' } },
  { method: 'get', suffix: '/balance', policy: 'either' },
  { method: 'post', suffix: '/balance', policy: 'cc', body: { balance: 77 } },
  { method: 'patch', suffix: '/balance', policy: 'cc', body: { balance: 77 } },
  { method: 'get', suffix: '/limits', policy: 'cc' },
  { method: 'post', suffix: '/limits', policy: 'cc', body: limitsOf(1) },
  { method: 'patch', suffix: '/limits', policy: 'cc', body: limitsOf(1) },
  { method: 'get', suffix: '/fees', policy: 'cc' },
  { method: 'patch', suffix: '/fees', policy: 'cc', body: { feeType: 'PERCENTAGE', amount: 50 } },
  { method: 'get', suffix: '/operado', policy: 'cc' },
  { method: 'get', suffix: '/fulloperado', policy: 'cc' },
];

describe('wallet accounts (real database)', () => {
  let t: TestApp;
  let appA: TestClient;
  let appB: TestClient;
  let tokenA: string;
  let tokenB: string;

  beforeAll(async () => {
    ({ t, appA, appB, tokenA, tokenB } = await startWithTwoApplications('wallet'));
  });
  afterAll(() => t.close());

  const api = () => request(t.http);
  /** Each kind of owner and its routes. */
  const OWNER_KINDS = [
    ['USER', '/v1/users'],
    ['COMPANY', '/v1/companies'],
  ] as const;
  const path = (uuid: string, suffix = '') => `/v1/wallet/accounts/${uuid}${suffix}`;
  const post = (body: unknown, token = tokenA) =>
    api()
      .post('/v1/wallet/accounts')
      .set('Authorization', bearer(token))
      .send(body as object);
  const call = (route: Route, uuid: string, token: string) => {
    const test = api()[route.method](path(uuid, route.suffix)).set('Authorization', bearer(token));
    return route.body ? test.send(route.body) : test;
  };
  const get = (uuid: string, token = tokenA) => api().get(path(uuid)).set('Authorization', bearer(token));
  const patch = (uuid: string, body: object, token = tokenA) =>
    api().patch(path(uuid)).set('Authorization', bearer(token)).send(body);
  const patchAlias = (uuid: string, body: object, token = tokenA) =>
    api().patch(path(uuid, '/alias')).set('Authorization', bearer(token)).send(body);
  const remove = (uuid: string, token = tokenA) =>
    api().delete(path(uuid)).set('Authorization', bearer(token));
  const user = () => createOwner(t.http, tokenA);
  const open = async (ownerType: 'USER' | 'COMPANY' = 'USER', overrides: Record<string, unknown> = {}) =>
    openAccount(
      t.http,
      tokenA,
      appA.appId,
      await createOwner(t.http, tokenA, ownerType),
      ownerType,
      overrides,
    );
  const accountRow = async (uuid: string) =>
    (
      (await t.dataSource.query(`SELECT * FROM wallet_accounts WHERE id = $1`, [uuid])) as Record<
        string,
        unknown
      >[]
    )[0];

  describe('POST /v1/wallet/accounts', () => {
    it('opens an account: 201 AccountInfo exactly, with a CVU and an alias; a ledger account of the same id', async () => {
      const ownerId = await user();
      const before = Date.now();
      const response = await post(accountBody(appA.appId, ownerId));
      expect(response.status).toBe(201);
      expect(Object.keys(response.body).sort()).toStrictEqual(ACCOUNT_KEYS);
      expect(response.body).toStrictEqual({
        ownerType: 'USER',
        uuid: expect.stringMatching(UUID),
        status: 'ACTIVE',
        created: expect.stringMatching(ISO_DATE_TIME),
        updated: expect.stringMatching(ISO_DATE_TIME),
        cvu: expect.stringMatching(/^\d{22}$/),
        alias: expect.stringMatching(ALIAS),
        currency: 'ARS',
        balance: 0,
        monthlyDepositOperation: 0,
        monthlyWithdrawOperation: 0,
      });
      const account = response.body as AccountInfo;
      expectIssuedCvu(account.cvu);
      expect(account.alias.split('.')).toHaveLength(3);
      expect(Date.parse(account.created)).toBeGreaterThanOrEqual(before - 5_000);
      expect(Date.parse(account.created)).toBeLessThanOrEqual(Date.now() + 5_000);

      const read = await get(account.uuid);
      expect(read.status).toBe(200);
      expect(read.body).toStrictEqual(account);

      const row = await accountRow(account.uuid);
      expect(row).toMatchObject({
        app_id: appA.appId,
        owner_id: ownerId,
        owner_type: 'USER',
        cvu: account.cvu,
        status: 'ACTIVE',
        fee_type: 'FIXED',
        monthly_withdraw_limit: '1000.000000',
        monthly_deposit_limit: '2000.000000',
        annual_withdraw_limit: '12000.000000',
        annual_deposit_limit: '24000.000000',
      });
      expect(
        await t.dataSource.query(
          `SELECT kind, code, currency, balance::text AS balance FROM ledger_accounts WHERE id = $1`,
          [account.uuid],
        ),
      ).toStrictEqual([{ kind: 'WALLET', code: 'WALLET', currency: 'ARS', balance: '0.000000' }]);
      // Opening posts nothing.
      expect(
        await t.dataSource.query(`SELECT count(*)::int AS n FROM postings WHERE account_id = $1`, [
          account.uuid,
        ]),
      ).toStrictEqual([{ n: 0 }]);
    });

    it('opens an account for a company', async () => {
      const account = await open('COMPANY');
      expect(account.ownerType).toBe('COMPANY');
      expectIssuedCvu(account.cvu);
      expect((await get(account.uuid)).body).toStrictEqual(account);
    });

    it('issues 30 distinct valid CVUs and aliases to 30 owners opening accounts at once', async () => {
      const owners = await Promise.all(
        Array.from({ length: 30 }, (_, i) => createOwner(t.http, tokenA, i % 3 === 0 ? 'COMPANY' : 'USER')),
      );
      const responses = await Promise.all(
        owners.map((ownerId, i) => post(accountBody(appA.appId, ownerId, i % 3 === 0 ? 'COMPANY' : 'USER'))),
      );
      expect(responses.map((response) => response.status)).toStrictEqual(Array(30).fill(201));
      const accounts = responses.map((response) => response.body as AccountInfo);
      for (const account of accounts) expectIssuedCvu(account.cvu);
      expect(new Set(accounts.map((account) => account.cvu)).size).toBe(30);
      expect(new Set(accounts.map((account) => account.alias.toLowerCase())).size).toBe(30);
      expect(new Set(accounts.map((account) => account.uuid)).size).toBe(30);
      const [{ cvus, rows }] = (await t.dataSource.query(
        `SELECT count(DISTINCT cvu)::int AS cvus, count(*)::int AS rows FROM wallet_accounts`,
      )) as { cvus: number; rows: number }[];
      expect(cvus).toBe(rows);
    });

    it('the same owner opening at once: exactly one account, the others 400 duplicate at uuid', async () => {
      const ownerId = await user();
      const responses = await Promise.all(
        Array.from({ length: 5 }, () => post(accountBody(appA.appId, ownerId))),
      );
      const statuses = responses.map((response) => response.status).sort();
      expect(statuses).toStrictEqual([201, 400, 400, 400, 400]);
      for (const response of responses.filter((r) => r.status === 400)) {
        expect(expectValidation(response)).toStrictEqual([
          { path: 'uuid', type: 'duplicate', message: expect.any(String) },
        ]);
      }
      expect(
        await t.dataSource.query(`SELECT count(*)::int AS n FROM wallet_accounts WHERE owner_id = $1`, [
          ownerId,
        ]),
      ).toStrictEqual([{ n: 1 }]);
    });

    it('refuses an owner that does not exist, of another application, or of the other type: 400 notfound at uuid', async () => {
      const ofB = await createOwner(t.http, tokenB);
      const company = await createOwner(t.http, tokenA, 'COMPANY');
      const person = await user();
      const before = await countRows(t.dataSource, 'wallet_accounts');
      for (const body of [
        accountBody(appA.appId, randomUUID()),
        accountBody(appA.appId, randomUUID(), 'COMPANY'),
        accountBody(appA.appId, ofB),
        accountBody(appA.appId, company, 'USER'),
        accountBody(appA.appId, person, 'COMPANY'),
      ]) {
        expect(expectValidation(await post(body))).toStrictEqual([
          { path: 'uuid', type: 'notfound', message: expect.any(String) },
        ]);
      }
      // A deleted user is gone too.
      const deleted = await user();
      expect((await api().delete(`/v1/users/${deleted}`).set('Authorization', bearer(tokenA))).status).toBe(
        204,
      );
      expect(byPath(expectValidation(await post(accountBody(appA.appId, deleted))))).toStrictEqual({
        uuid: 'notfound',
      });
      expect(await countRows(t.dataSource, 'wallet_accounts')).toBe(before);
    });

    it("refuses an appId other than the caller's: 400 at appId", async () => {
      const ownerId = await user();
      for (const appId of [appB.appId, randomUUID()]) {
        expect(byPath(expectValidation(await post(accountBody(appId, ownerId))))).toStrictEqual({
          appId: 'invalid',
        });
      }
      expect(byPath(expectValidation(await post(accountBody('not-a-uuid', ownerId))))).toStrictEqual({
        appId: 'invalid',
      });
      // The caller's appId in upper case is the caller's.
      const account = await post(accountBody(appA.appId.toUpperCase(), ownerId));
      expect(account.status).toBe(201);
    });

    it('refuses a second account for the same owner: 400 duplicate at uuid', async () => {
      const ownerId = await user();
      await openAccount(t.http, tokenA, appA.appId, ownerId);
      expect(expectValidation(await post(accountBody(appA.appId, ownerId)))).toStrictEqual([
        { path: 'uuid', type: 'duplicate', message: expect.any(String) },
      ]);
      // Also when the uuid is written in upper case.
      expect(
        byPath(expectValidation(await post(accountBody(appA.appId, ownerId.toUpperCase())))),
      ).toStrictEqual({
        uuid: 'duplicate',
      });
    });

    it('refuses amounts with 3 decimals, negative, too large or not numbers, at their path', async () => {
      const ownerId = await user();
      const before = await countRows(t.dataSource, 'wallet_accounts');
      for (const field of [
        'fees',
        'monthlyWithdrawLimit',
        'monthlyDepositLimit',
        'annualWithdrawLimit',
        'annualDepositLimit',
      ]) {
        for (const value of [10.001, -1, 1e13, '100', true]) {
          const items = expectValidation(
            await post(accountBody(appA.appId, ownerId, 'USER', { [field]: value })),
          );
          expect(byPath(items)).toStrictEqual({ [field]: 'invalid' });
        }
        const missing = accountBody(appA.appId, ownerId);
        delete missing[field];
        expect(byPath(expectValidation(await post(missing)))).toStrictEqual({ [field]: 'required' });
      }
      expect(await countRows(t.dataSource, 'wallet_accounts')).toBe(before);
      // Two decimals are fine and kept exactly.
      const account = await openAccount(t.http, tokenA, appA.appId, ownerId, 'USER', {
        fees: 0.1,
        monthlyWithdrawLimit: 1234.56,
      });
      const limits = await api().get(path(account.uuid, '/limits')).set('Authorization', bearer(tokenA));
      expect(limits.body.data.monthlyWithdrawLimit).toBe(1234.56);
      const fees = await api().get(path(account.uuid, '/fees')).set('Authorization', bearer(tokenA));
      expect(fees.body).toMatchObject({ feeType: 'FIXED', amount: 0.1 });
    });

    it('is a closed object: balance, status, currency, cvu or alias are refused; ownerType must be USER or COMPANY', async () => {
      const ownerId = await user();
      for (const extra of [
        { balance: 100 },
        { status: 'ACTIVE' },
        { currency: 'USD' },
        { cvu: '0000031' },
        { alias: 'mi.alias' },
      ]) {
        const items = expectValidation(await post(accountBody(appA.appId, ownerId, 'USER', extra)));
        expect(byPath(items)).toStrictEqual({ [Object.keys(extra)[0]]: 'invalid' });
      }
      expect(
        byPath(
          expectValidation(await post(accountBody(appA.appId, ownerId, 'USER', { ownerType: 'PERSON' }))),
        ),
      ).toStrictEqual({
        ownerType: 'invalid',
      });
      expect(byPath(expectValidation(await post(accountBody(appA.appId, 'not-a-uuid'))))).toStrictEqual({
        uuid: 'invalid',
      });
      expect(
        await t.dataSource.query(`SELECT count(*)::int AS n FROM wallet_accounts WHERE owner_id = $1`, [
          ownerId,
        ]),
      ).toStrictEqual([{ n: 0 }]);
    });

    it('a user token opens an account for its own subject only', async () => {
      const me = await user();
      const other = await user();
      const company = await createOwner(t.http, tokenA, 'COMPANY');
      const myToken = await subjectToken(appA, me);
      for (const body of [accountBody(appA.appId, other), accountBody(appA.appId, company, 'COMPANY')]) {
        expect(byPath(expectValidation(await post(body, myToken)))).toStrictEqual({ uuid: 'notfound' });
      }
      const mine = await post(accountBody(appA.appId, me), myToken);
      expect(mine.status).toBe(201);
      expectIssuedCvu((mine.body as AccountInfo).cvu);
      expect((await get((mine.body as AccountInfo).uuid, myToken)).body).toStrictEqual(mine.body);
      // The user chose its limits and fee: the account waits for the application to activate it.
      expect((mine.body as AccountInfo).status).toBe('PENDING');
      expect((await patch((mine.body as AccountInfo).uuid, { status: 'ACTIVE' }, myToken)).status).toBe(403);
      expect((await patch((mine.body as AccountInfo).uuid, { status: 'ACTIVE' })).status).toBe(200);
      // The company's own token opens the company's account.
      const companyAccount = await post(
        accountBody(appA.appId, company, 'COMPANY'),
        await subjectToken(appA, company),
      );
      expect(companyAccount.status).toBe(201);
      // appId must still be the caller's.
      expect(
        byPath(expectValidation(await post(accountBody(appB.appId, other), await subjectToken(appA, other)))),
      ).toStrictEqual({
        appId: 'invalid',
      });
    });

    it('needs credentials', async () => {
      expectUnauthorized(await api().post('/v1/wallet/accounts').send(accountBody(appA.appId, randomUUID())));
      expectUnauthorized(
        await api()
          .post('/v1/wallet/accounts')
          .set('Authorization', 'Bearer garbage')
          .send(accountBody(appA.appId, randomUUID())),
      );
    });
  });

  describe('GET and PATCH /v1/wallet/accounts/{uuid}', () => {
    it('PATCH changes name and nationality (kept, not shown in AccountInfo) and returns AccountInfo', async () => {
      const account = await open();
      const response = await patch(account.uuid, { name: ' Caja de ahorro ', nationality: 'UY' });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ ...account, updated: expect.stringMatching(ISO_DATE_TIME) });
      expect(await accountRow(account.uuid)).toMatchObject({ name: 'Caja de ahorro', nationality: 'UY' });
      // An empty PATCH is fine and changes nothing.
      const empty = await patch(account.uuid, {});
      expect(empty.status).toBe(200);
      expect(empty.body).toStrictEqual(response.body);
    });

    it('PATCH validates its fields and is closed', async () => {
      const account = await open();
      for (const [body, expected] of [
        [{ nationality: 'ar' }, { nationality: 'invalid' }],
        [{ nationality: 'XX' }, { nationality: 'invalid' }],
        [{ name: '' }, { name: 'invalid' }],
        [{ status: 'DELETED' }, { status: 'invalid' }],
        [{ status: 'active' }, { status: 'invalid' }],
        [{ balance: 10 }, { balance: 'invalid' }],
        [{ cvu: account.cvu }, { cvu: 'invalid' }],
        [{ alias: 'abc' }, { alias: 'invalid' }],
        [{ type: 'USER' }, { entityId: 'required' }],
        [{ entityId: randomUUID() }, { type: 'required' }],
      ] as const) {
        expect(byPath(expectValidation(await patch(account.uuid, body)))).toStrictEqual(expected);
      }
      expect((await get(account.uuid)).body).toStrictEqual(account);
    });

    it('moves the account to another owner (type + entityId) for the application only', async () => {
      const account = await open();
      const company = await createOwner(t.http, tokenA, 'COMPANY');
      const ownerId = ((await accountRow(account.uuid)) as { owner_id: string }).owner_id;
      expectForbidden(
        await patch(account.uuid, { type: 'COMPANY', entityId: company }, await subjectToken(appA, ownerId)),
        'INSUFFICIENT_PERMISSIONS',
      );
      expect(
        byPath(expectValidation(await patch(account.uuid, { type: 'COMPANY', entityId: randomUUID() }))),
      ).toStrictEqual({
        entityId: 'notfound',
      });
      const moved = await patch(account.uuid, { type: 'COMPANY', entityId: company });
      expect(moved.status).toBe(200);
      expect(moved.body).toMatchObject({ ownerType: 'COMPANY', uuid: account.uuid, cvu: account.cvu });
      expect(await accountRow(account.uuid)).toMatchObject({ owner_type: 'COMPANY', owner_id: company });
      // An owner that already has an account cannot take another one.
      const other = await open('COMPANY');
      const otherOwner = ((await accountRow(other.uuid)) as { owner_id: string }).owner_id;
      expect(
        byPath(expectValidation(await patch(account.uuid, { type: 'COMPANY', entityId: otherOwner }))),
      ).toStrictEqual({
        entityId: 'duplicate',
      });
      // Also when a (free) alias changes in the same request: the owner is what is duplicate.
      expect(
        byPath(
          expectValidation(
            await patch(account.uuid, { alias: 'libre.alias.x', type: 'COMPANY', entityId: otherOwner }),
          ),
        ),
      ).toStrictEqual({ entityId: 'duplicate' });
      expect((await get(account.uuid)).body.alias).toBe(account.alias);
    });

    it('an unknown account is 404; a malformed uuid is 400', async () => {
      const unknown = randomUUID();
      expectNotFound(await get(unknown), unknown);
      expectNotFound(await patch(unknown, { name: 'x' }), unknown);
      expectValidation(await get('not-a-uuid'));
      expectValidation(await remove(`${randomUUID()}x`));
    });
  });

  describe('a deletion committed right after a change, before its answer could be read (decision 0094)', () => {
    const closeAccount = `UPDATE wallet_accounts SET status = 'DELETED', deleted_at = now() WHERE id = $1`;

    it("POST: the account opened is answered (201), not 404 naming an id never sent; the owner's deletion stands", async () => {
      const ownerId = await user();
      const response = await commitRightAfterWrite(
        t.dataSource,
        () => post(accountBody(appA.appId, ownerId)),
        'wallet_accounts',
        `WITH closed AS (
           UPDATE wallet_accounts SET status = 'DELETED', deleted_at = now() WHERE owner_id = $1 RETURNING 1
         )
         UPDATE users SET deleted_at = now() WHERE id = $1`,
        [ownerId],
      );
      expect(response.status).toBe(201);
      const row = await accountRow((response.body as AccountInfo).uuid);
      expect(response.body).toStrictEqual({
        ownerType: 'USER',
        uuid: row.id,
        status: 'ACTIVE',
        created: (row.created_at as Date).toISOString(),
        updated: (row.updated_at as Date).toISOString(),
        cvu: row.cvu,
        alias: row.alias,
        currency: 'ARS',
        balance: 0,
        monthlyDepositOperation: 0,
        monthlyWithdrawOperation: 0,
      });
      expect(row).toMatchObject({ owner_id: ownerId, status: 'DELETED' });
    });

    it.each([
      ['PATCH', (uuid: string) => patch(uuid, { alias: 'Cambio.0094.a' }), 'Cambio.0094.a'],
      ['PATCH …/alias', (uuid: string) => patchAlias(uuid, { newAlias: 'Cambio.0094.b' }), 'Cambio.0094.b'],
    ])('%s: the change committed is answered (200), not 404; the deletion stands', async (_, send, alias) => {
      const account = await open();
      const response = await commitRightAfterWrite(
        t.dataSource,
        () => send(account.uuid),
        'wallet_accounts',
        closeAccount,
        [account.uuid],
      );
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        ...account,
        alias,
        updated: expect.stringMatching(ISO_DATE_TIME),
      });
      expect(await accountRow(account.uuid)).toMatchObject({ alias, status: 'DELETED' });
    });
  });

  describe('aliases', () => {
    it('PATCH …/alias changes the alias and returns AccountInfo', async () => {
      const account = await open();
      const response = await patchAlias(account.uuid, { newAlias: 'Mi-Cuenta.2026' });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        ...account,
        alias: 'Mi-Cuenta.2026',
        updated: expect.stringMatching(ISO_DATE_TIME),
      });
      expect((await get(account.uuid)).body.alias).toBe('Mi-Cuenta.2026');
      // The same alias in another case is still its own: no conflict with itself.
      expect((await patchAlias(account.uuid, { newAlias: 'mi-cuenta.2026' })).status).toBe(200);
    });

    it("never takes another institution's alias (the lookup would answer ours for it): 400 duplicate, nothing changed", async () => {
      const account = await open();
      // pagos.rio.norte is an account at another institution (config/counterparty-directory.json).
      for (const taken of ['pagos.rio.norte', 'Pagos.Rio.Norte']) {
        expect(expectValidation(await patchAlias(account.uuid, { newAlias: taken }))).toStrictEqual([
          { path: 'newAlias', type: 'duplicate', message: 'this alias is taken' },
        ]);
        expect(expectValidation(await patch(account.uuid, { alias: taken }))).toStrictEqual([
          { path: 'alias', type: 'duplicate', message: 'this alias is taken' },
        ]);
      }
      expect((await get(account.uuid)).body.alias).toBe(account.alias);
      const lookup = await api()
        .post('/v1/counterparty')
        .set('Authorization', bearer(tokenA))
        .send({ destinatario: 'pagos.rio.norte' });
      expect(lookup.body).toMatchObject({ cvu: '', cbu: expect.not.stringContaining(account.cvu) });
    });

    it('refuses a malformed alias: too short, too long, bad characters, not a string, missing', async () => {
      const account = await open();
      for (const newAlias of [
        'abcde',
        'a'.repeat(21),
        'luna mate',
        'luna_mate',
        'ñandu.rio',
        'luna/mate',
        'luna@mate',
        'luna.mate\n',
        123456,
        '',
      ]) {
        expect(byPath(expectValidation(await patchAlias(account.uuid, { newAlias })))).toStrictEqual({
          newAlias: 'invalid',
        });
      }
      for (const body of [{}, { newAlias: null }]) {
        expect(byPath(expectValidation(await patchAlias(account.uuid, body)))).toStrictEqual({
          newAlias: 'required',
        });
      }
      expect(
        byPath(expectValidation(await patchAlias(account.uuid, { newAlias: 'valid.alias', alias: 'x' }))),
      ).toStrictEqual({
        alias: 'invalid',
      });
      // Exactly 6 and exactly 20 are fine.
      expect((await patchAlias(account.uuid, { newAlias: 'abc-12' })).status).toBe(200);
      expect((await patchAlias(account.uuid, { newAlias: 'a.b-c'.padEnd(20, '9') })).status).toBe(200);
      expect((await get(account.uuid)).body.alias).toBe('a.b-c999999999999999');
    });

    it("refuses another account's alias, in any case: 400 duplicate (through both routes)", async () => {
      const first = await open();
      const second = await open();
      expect((await patchAlias(first.uuid, { newAlias: 'casa.blanca.rio' })).status).toBe(200);
      for (const newAlias of ['casa.blanca.rio', 'CASA.Blanca.Rio']) {
        expect(expectValidation(await patchAlias(second.uuid, { newAlias }))).toStrictEqual([
          { path: 'newAlias', type: 'duplicate', message: expect.any(String) },
        ]);
        expect(expectValidation(await patch(second.uuid, { alias: newAlias }))).toStrictEqual([
          { path: 'alias', type: 'duplicate', message: expect.any(String) },
        ]);
      }
      // A generated alias is taken too.
      expect(
        byPath(expectValidation(await patchAlias(first.uuid, { newAlias: second.alias.toUpperCase() }))),
      ).toStrictEqual({
        newAlias: 'duplicate',
      });
      expect((await get(second.uuid)).body.alias).toBe(second.alias);
    });

    it('two accounts racing for the same alias: one wins, the other gets duplicate', async () => {
      const first = await open();
      const second = await open();
      const responses = await Promise.all([
        patchAlias(first.uuid, { newAlias: 'carrera.alias' }),
        patchAlias(second.uuid, { newAlias: 'CARRERA.alias' }),
      ]);
      expect(responses.map((response) => response.status).sort()).toStrictEqual([200, 400]);
      const loser = responses.find((response) => response.status === 400)!;
      expect(byPath(expectValidation(loser))).toStrictEqual({ newAlias: 'duplicate' });
    });
  });

  describe('status state machine', () => {
    const refused = async (uuid: string, status: string) =>
      expectForbidden(await patch(uuid, { status }), 'INVALID_STATE');

    it('accounts start ACTIVE; ACTIVE ⇄ INACTIVE; neither goes back to PENDING', async () => {
      const account = await open();
      expect(account.status).toBe('ACTIVE');
      await refused(account.uuid, 'PENDING');
      const inactive = await patch(account.uuid, { status: 'INACTIVE' });
      expect(inactive.status).toBe(200);
      expect(inactive.body).toStrictEqual({
        ...account,
        status: 'INACTIVE',
        updated: expect.stringMatching(ISO_DATE_TIME),
      });
      await refused(account.uuid, 'PENDING');
      // Setting the current status again is not a change.
      expect((await patch(account.uuid, { status: 'INACTIVE' })).status).toBe(200);
      const active = await patch(account.uuid, { status: 'ACTIVE' });
      expect(active.status).toBe(200);
      expect(active.body.status).toBe('ACTIVE');
      expect(await accountRow(account.uuid)).toMatchObject({ status: 'ACTIVE' });
    });

    it('a refused change changes nothing else in the same request', async () => {
      const account = await open();
      expectForbidden(
        await patch(account.uuid, { status: 'PENDING', name: 'No', alias: 'no.cambia.x' }),
        'INVALID_STATE',
      );
      expect(await accountRow(account.uuid)).toMatchObject({
        status: 'ACTIVE',
        name: null,
        alias: account.alias,
      });
    });

    it('a PENDING account (set by the operator) may go to ACTIVE or INACTIVE', async () => {
      for (const next of ['ACTIVE', 'INACTIVE']) {
        const account = await open();
        await t.dataSource.query(`UPDATE wallet_accounts SET status = 'PENDING' WHERE id = $1`, [
          account.uuid,
        ]);
        expect((await get(account.uuid)).body.status).toBe('PENDING');
        const response = await patch(account.uuid, { status: next });
        expect(response.status).toBe(200);
        expect(response.body.status).toBe(next);
      }
    });

    it('the owner may stop its own account with its user token; only the application activates one', async () => {
      const ownerId = await user();
      const account = await openAccount(t.http, tokenA, appA.appId, ownerId);
      const own = await subjectToken(appA, ownerId);
      const response = await patch(account.uuid, { status: 'INACTIVE' }, own);
      expect(response.status).toBe(200);
      expect(response.body.status).toBe('INACTIVE');
      // Out of INACTIVE, or out of PENDING (an account the application has not let move money yet): refused.
      for (const from of ['INACTIVE', 'PENDING']) {
        await t.dataSource.query(`UPDATE wallet_accounts SET status = $2 WHERE id = $1`, [
          account.uuid,
          from,
        ]);
        const refused = await patch(account.uuid, { status: 'ACTIVE', name: 'No' }, own);
        expectForbidden(refused, 'INSUFFICIENT_PERMISSIONS');
        expect(await accountRow(account.uuid)).toMatchObject({ status: from, name: null });
      }
      expect((await patch(account.uuid, { status: 'ACTIVE' })).body.status).toBe('ACTIVE');
    });
  });

  describe('DELETE /v1/wallet/accounts/{uuid}', () => {
    it('deletes: 200 {message}; afterwards 404 on every route; the row is kept in a deleted state', async () => {
      const account = await open();
      const response = await remove(account.uuid);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ message: expect.any(String) });
      for (const route of ACCOUNT_ROUTES)
        expectNotFound(await call(route, account.uuid, tokenA), account.uuid);
      expect(await accountRow(account.uuid)).toMatchObject({
        status: 'DELETED',
        deleted_at: expect.any(Date),
      });
    });

    it('is refused with 403 INVALID_STATE while the balance is not zero, allowed at zero', async () => {
      const account = await open();
      await setBalance(t.http, tokenA, account.uuid, 0.01);
      expectForbidden(await remove(account.uuid), 'INVALID_STATE');
      expect((await get(account.uuid)).body).toMatchObject({ status: 'ACTIVE', balance: 0.01 });
      await setBalance(t.http, tokenA, account.uuid, 0);
      expect((await remove(account.uuid)).status).toBe(200);
      expectNotFound(await get(account.uuid), account.uuid);
    });

    it('after deletion the owner opens a new account: a new CVU (never reused), and the old alias is free again', async () => {
      const ownerId = await user();
      const old = await openAccount(t.http, tokenA, appA.appId, ownerId);
      await patchAlias(old.uuid, { newAlias: 'alias.reusable' }).expect(200);
      expect((await remove(old.uuid)).status).toBe(200);

      const fresh = await openAccount(t.http, tokenA, appA.appId, ownerId);
      expect(fresh.uuid).not.toBe(old.uuid);
      expect(fresh.cvu).not.toBe(old.cvu);
      expectIssuedCvu(fresh.cvu);
      // CVUs come from a sequence: later accounts get later client numbers.
      expect(BigInt(fresh.cvu.slice(8, 21))).toBeGreaterThan(BigInt(old.cvu.slice(8, 21)));
      const renamed = await patchAlias(fresh.uuid, { newAlias: 'ALIAS.reusable' });
      expect(renamed.status).toBe(200);
      expect(renamed.body.alias).toBe('ALIAS.reusable');
      // Every CVU ever issued, deleted accounts included, is distinct.
      const [{ cvus, rows }] = (await t.dataSource.query(
        `SELECT count(DISTINCT cvu)::int AS cvus, count(*)::int AS rows FROM wallet_accounts`,
      )) as { cvus: number; rows: number }[];
      expect(cvus).toBe(rows);
      // The user shows its new account.
      const shown = await api().get(`/v1/users/${ownerId}`).set('Authorization', bearer(tokenA));
      expect(shown.body.account).toStrictEqual({
        ...fresh,
        alias: 'ALIAS.reusable',
        updated: expect.any(String),
      });
    });

    it('deleting twice: the second is 404', async () => {
      const account = await open();
      expect((await remove(account.uuid)).status).toBe(200);
      expectNotFound(await remove(account.uuid), account.uuid);
    });
  });

  describe('limits (CC)', () => {
    const limits = (uuid: string, token = tokenA) =>
      api().get(path(uuid, '/limits')).set('Authorization', bearer(token));

    it('GET returns LimitsResponse with the limits set at creation', async () => {
      const account = await open();
      const response = await limits(account.uuid);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        data: {
          id: expect.stringMatching(UUID),
          accountId: account.uuid,
          monthlyWithdrawLimit: 1000,
          monthlyDepositLimit: 2000,
          annualWithdrawLimit: 12000,
          annualDepositLimit: 24000,
        },
        statusCode: 200,
      });
    });

    it('POST and PATCH set all four (round trip); the limits id is stable', async () => {
      const account = await open();
      const { id } = (await limits(account.uuid)).body.data as { id: string };
      for (const [method, values] of [
        [
          'post',
          {
            monthlyWithdrawLimit: 10.5,
            monthlyDepositLimit: 20.25,
            annualWithdrawLimit: 0,
            annualDepositLimit: 999_999_999_999.99,
          },
        ],
        [
          'patch',
          {
            monthlyWithdrawLimit: 0.01,
            monthlyDepositLimit: 0.1,
            annualWithdrawLimit: 0.2,
            annualDepositLimit: 0.3,
          },
        ],
      ] as const) {
        const route = api()[method](path(account.uuid, '/limits'));
        const response = await route.set('Authorization', bearer(tokenA)).send(values);
        expect(response.status).toBe(200);
        expect(response.body).toStrictEqual({ status: 200, message: expect.any(String) });
        expect((await limits(account.uuid)).body).toStrictEqual({
          data: { id, accountId: account.uuid, ...values },
          statusCode: 200,
        });
      }
    });

    it('SetLimitsRequest is closed with all four required; amounts follow the currency', async () => {
      const account = await open();
      const before = (await limits(account.uuid)).body as unknown;
      const send = (body: object) =>
        api().patch(path(account.uuid, '/limits')).set('Authorization', bearer(tokenA)).send(body);
      for (const field of Object.keys(limitsOf())) {
        const missing: Record<string, unknown> = limitsOf();
        delete missing[field];
        expect(byPath(expectValidation(await send(missing)))).toStrictEqual({ [field]: 'required' });
        for (const value of [1.005, -5, 1e13, '10', null]) {
          const expected = value === null ? 'required' : 'invalid';
          expect(byPath(expectValidation(await send({ ...limitsOf(), [field]: value })))).toStrictEqual({
            [field]: expected,
          });
        }
      }
      expect(byPath(expectValidation(await send({ ...limitsOf(), currency: 'ARS' })))).toStrictEqual({
        currency: 'invalid',
      });
      expect((await limits(account.uuid)).body).toStrictEqual(before);
    });
  });

  describe('fees (CC)', () => {
    const fees = (uuid: string) => api().get(path(uuid, '/fees')).set('Authorization', bearer(tokenA));
    const setFees = (uuid: string, body: object) =>
      api().patch(path(uuid, '/fees')).set('Authorization', bearer(tokenA)).send(body);

    it('GET returns FeesResponse: the fixed fee set at creation', async () => {
      const account = await open('USER', { fees: 12.5 });
      const response = await fees(account.uuid);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        id: expect.stringMatching(UUID),
        accountId: account.uuid,
        feeType: 'FIXED',
        amount: 12.5,
      });
    });

    it('PATCH sets FIXED or PERCENTAGE (round trip); the fees id is stable', async () => {
      const account = await open();
      const { id } = (await fees(account.uuid)).body as { id: string };
      for (const body of [
        { feeType: 'PERCENTAGE', amount: 1.2345 },
        { feeType: 'PERCENTAGE', amount: 100 },
        { feeType: 'PERCENTAGE', amount: 0 },
        { feeType: 'FIXED', amount: 10.99 },
      ]) {
        const response = await setFees(account.uuid, body);
        expect(response.status).toBe(200);
        expect(response.body).toStrictEqual({ status: 200, message: expect.any(String) });
        expect((await fees(account.uuid)).body).toStrictEqual({ id, accountId: account.uuid, ...body });
      }
    });

    it('refuses a percentage over 100 or with 5 decimals, a fixed fee with 3 decimals, other feeTypes, extra fields', async () => {
      const account = await open('USER', { fees: 3 });
      const before = (await fees(account.uuid)).body as unknown;
      for (const [body, expected] of [
        [{ feeType: 'PERCENTAGE', amount: 100.01 }, { amount: 'invalid' }],
        [{ feeType: 'PERCENTAGE', amount: 1.23456 }, { amount: 'invalid' }],
        [{ feeType: 'PERCENTAGE', amount: -1 }, { amount: 'invalid' }],
        [{ feeType: 'FIXED', amount: 1.234 }, { amount: 'invalid' }],
        [{ feeType: 'FIXED', amount: 1e13 }, { amount: 'invalid' }],
        [{ feeType: 'FIXED', amount: '1' }, { amount: 'invalid' }],
        [{ feeType: 'TIERED', amount: 1 }, { feeType: 'invalid' }],
        [{ feeType: 'fixed', amount: 1 }, { feeType: 'invalid' }],
        [{ amount: 1 }, { feeType: 'required' }],
        [{ feeType: 'FIXED' }, { amount: 'required' }],
        [{ feeType: 'FIXED', amount: 1, currency: 'ARS' }, { currency: 'invalid' }],
      ] as const) {
        expect(byPath(expectValidation(await setFees(account.uuid, body)))).toStrictEqual(expected);
      }
      expect((await fees(account.uuid)).body).toStrictEqual(before);
    });
  });

  describe('operated amounts (CC)', () => {
    const operado = (uuid: string, which: 'operado' | 'fulloperado') =>
      api()
        .get(path(uuid, `/${which}`))
        .set('Authorization', bearer(tokenA));

    it('are zeros for a new account, in OperadoResponse and FullOperadoResponse', async () => {
      const account = await open();
      for (const which of ['operado', 'fulloperado'] as const) {
        const response = await operado(account.uuid, which);
        expect(response.status).toBe(200);
        expect(response.body).toStrictEqual({
          id: expect.stringMatching(UUID),
          accountUUID: account.uuid,
          monthDeposit: 0,
          monthWithdraw: 0,
          annualDeposit: 0,
          annualWithdraw: 0,
          createdAt: expect.stringMatching(ISO_DATE_TIME),
          updatedAt: expect.stringMatching(ISO_DATE_TIME),
        });
      }
    });

    it('reflect the current month and year on the Buenos Aires calendar (and AccountInfo the month)', async () => {
      const account = await open();
      const { month, year } = periodsOf(new Date(), BUENOS_AIRES);
      expect(month).toMatch(/^M\d{4}-\d{2}$/);
      expect(year).toMatch(/^Y\d{4}$/);
      const insert = (period: string, deposit: string, withdraw: string) =>
        t.dataSource.query(
          `INSERT INTO operated_amounts (account_id, period, deposit, withdraw) VALUES ($1, $2, $3, $4)`,
          [account.uuid, period, deposit, withdraw],
        );
      // Operated amounts are kept per month; the year's is the sum of its months (decision 0035).
      const otherMonth = `M${year.slice(1)}-${month.endsWith('-01') ? '02' : '01'}`;
      await insert(month, '150.10', '20.20');
      await insert(otherMonth, '850.20', '379.81');
      // Other years do not count.
      await insert('M1999-01', '5555', '5555');
      await insert(`M${Number(year.slice(1)) + 1}-01`, '7777', '7777');
      const first = await operado(account.uuid, 'operado');
      expect(first.body).toStrictEqual({
        id: expect.stringMatching(UUID),
        accountUUID: account.uuid,
        monthDeposit: 150.1,
        monthWithdraw: 20.2,
        annualDeposit: 1000.3,
        annualWithdraw: 400.01,
        createdAt: expect.stringMatching(ISO_DATE_TIME),
        updatedAt: expect.stringMatching(ISO_DATE_TIME),
      });
      expect((await operado(account.uuid, 'fulloperado')).body).toStrictEqual(first.body);
      // The id is stable.
      expect((await operado(account.uuid, 'operado')).body.id).toBe(first.body.id);
      expect((await get(account.uuid)).body).toStrictEqual({
        ...account,
        monthlyDepositOperation: 150.1,
        monthlyWithdrawOperation: 20.2,
      });
      // The owner's view carries the same numbers.
      const ownerId = ((await accountRow(account.uuid)) as { owner_id: string }).owner_id;
      const shown = await api().get(`/v1/users/${ownerId}`).set('Authorization', bearer(tokenA));
      expect(shown.body.account).toMatchObject({
        monthlyDepositOperation: 150.1,
        monthlyWithdrawOperation: 20.2,
      });
    });
  });

  describe('tenant isolation and bearer scoping on every route', () => {
    it("another application's account is 404 everywhere, to its client and to its users", async () => {
      const ownerId = await user();
      const account = await openAccount(t.http, tokenA, appA.appId, ownerId);
      const ownerOfB = await createOwner(t.http, tokenB);
      const userOfB = await subjectToken(appB, ownerOfB);
      // Even a B token naming A's owner as subject.
      const spoof = await subjectToken(appB, ownerId);
      for (const route of ACCOUNT_ROUTES) {
        expectNotFound(await call(route, account.uuid, tokenB), account.uuid);
        for (const token of [userOfB, spoof]) {
          const response = await call(route, account.uuid, token);
          if (route.policy === 'cc') expectUnauthorized(response);
          else expectNotFound(response, account.uuid);
        }
      }
      expect((await get(account.uuid)).body).toStrictEqual(account);
    });

    it('a user token reaches its own account on the Either routes only; another user of the same app gets 404', async () => {
      const ownerId = await user();
      const account = await openAccount(t.http, tokenA, appA.appId, ownerId);
      const other = await user();
      await openAccount(t.http, tokenA, appA.appId, other);
      const otherToken = await subjectToken(appA, other);
      const ownToken = await subjectToken(appA, ownerId);
      for (const route of ACCOUNT_ROUTES) {
        const response = await call(route, account.uuid, otherToken);
        if (route.policy === 'cc') expectUnauthorized(response);
        else expectNotFound(response, account.uuid);
        if (route.policy === 'cc') expectUnauthorized(await call(route, account.uuid, ownToken));
      }
      // Nothing changed.
      expect((await get(account.uuid)).body).toStrictEqual(account);
      // The owner's own token reaches the Either routes.
      expect((await get(account.uuid, ownToken)).body).toStrictEqual(account);
      const balance = await api().get(path(account.uuid, '/balance')).set('Authorization', bearer(ownToken));
      expect(balance.body).toStrictEqual({
        id: expect.stringMatching(UUID),
        accountId: account.uuid,
        balance: 0,
      });
      expect((await patchAlias(account.uuid, { newAlias: 'propio.alias' }, ownToken)).status).toBe(200);
      expect((await remove(account.uuid, ownToken)).status).toBe(200);
    });

    it('balance reads sent at once share database queries, and each is still answered within its own tenant', async () => {
      // Balance reads arriving together go to the database in one query (BalanceReader): every reader must
      // still see only what its own token reaches, whatever else is in the same query.
      const ownerId = await user();
      const mine = await openAccount(t.http, tokenA, appA.appId, ownerId);
      const theirs = await open();
      await setBalance(t.http, tokenA, mine.uuid, 12.5);
      await setBalance(t.http, tokenA, theirs.uuid, 7);
      const ownToken = await subjectToken(appA, ownerId);
      const cases = [
        { token: tokenA, uuid: mine.uuid, status: 200, balance: 12.5 },
        { token: tokenA, uuid: theirs.uuid, status: 200, balance: 7 },
        { token: tokenB, uuid: mine.uuid, status: 404 },
        { token: ownToken, uuid: mine.uuid, status: 200, balance: 12.5 },
        { token: ownToken, uuid: theirs.uuid, status: 404 },
        { token: tokenA, uuid: randomUUID(), status: 404 },
      ];
      const rounds = Array.from({ length: 8 }, () => cases).flat();
      const responses = await Promise.all(
        rounds.map(({ token, uuid }) =>
          api().get(path(uuid, '/balance')).set('Authorization', bearer(token)),
        ),
      );
      responses.forEach((response, n) => {
        const expected = rounds[n];
        if (expected.status === 404) expectNotFound(response, expected.uuid);
        else
          expect(response.body).toStrictEqual({
            id: expected.uuid,
            accountId: expected.uuid,
            balance: expected.balance,
          });
      });
    });

    it('the application reaches every account of its own: every route answers 200', async () => {
      const account = await open();
      for (const route of ACCOUNT_ROUTES.filter((route) => route.method !== 'delete')) {
        const response = await call(route, account.uuid, tokenA);
        expect([route.method, route.suffix, response.status]).toStrictEqual([
          route.method,
          route.suffix,
          200,
        ]);
      }
      // It holds 77 after the balance routes: not deletable.
      expectForbidden(await remove(account.uuid), 'INVALID_STATE');
    });

    it('without credentials every route is 401', async () => {
      const account = await open();
      for (const route of ACCOUNT_ROUTES) {
        const test = api()[route.method](path(account.uuid, route.suffix));
        expectUnauthorized(await (route.body ? test.send(route.body) : test));
      }
    });
  });

  describe('identity integration (the real wallet behind OWNER_ACCOUNTS)', () => {
    it('GET /v1/users/{uuid} shows the account once it exists', async () => {
      const ownerId = await user();
      const before = await api().get(`/v1/users/${ownerId}`).set('Authorization', bearer(tokenA));
      expect(before.body.account).toBeNull();
      const account = await openAccount(t.http, tokenA, appA.appId, ownerId);
      await setBalance(t.http, tokenA, account.uuid, 42.42);
      const after = await api().get(`/v1/users/${ownerId}`).set('Authorization', bearer(tokenA));
      expect(after.body.account).toStrictEqual({ ...account, balance: 42.42 });
    });

    it('DELETE /v1/users/{uuid} and /v1/companies/{uuid}: 403 INVALID_STATE while the account holds money, 204 at zero', async () => {
      for (const [type, base] of OWNER_KINDS) {
        const ownerId = await createOwner(t.http, tokenA, type);
        const account = await openAccount(t.http, tokenA, appA.appId, ownerId, type);
        await setBalance(t.http, tokenA, account.uuid, 1);
        expectForbidden(
          await api().delete(`${base}/${ownerId}`).set('Authorization', bearer(tokenA)),
          'INVALID_STATE',
        );
        await setBalance(t.http, tokenA, account.uuid, 0);
        expect((await api().delete(`${base}/${ownerId}`).set('Authorization', bearer(tokenA))).status).toBe(
          204,
        );
        // The owner's empty account is closed with it: gone from the API, its CVU never reused.
        expect(
          (await api().get(`/v1/wallet/accounts/${account.uuid}`).set('Authorization', bearer(tokenA)))
            .status,
        ).toBe(404);
        const [row] = (await t.dataSource.query(`SELECT status FROM wallet_accounts WHERE id = $1`, [
          account.uuid,
        ])) as {
          status: string;
        }[];
        expect(row.status).toBe('DELETED');
      }
    });

    it('DELETE of an owner or an account: 403 INVALID_STATE while a transfer of the account is not settled (its money would land in a closed account)', async () => {
      // No worker runs in this suite: a DEPOSIT pulled from a CBU stays INICIADO, its credit still to come.
      for (const [type, base] of OWNER_KINDS) {
        const ownerId = await createOwner(t.http, tokenA, type);
        const account = await openAccount(t.http, tokenA, appA.appId, ownerId, type);
        const deposit = await postTransfer(
          t.http,
          tokenA,
          transferBody(account.uuid, UNLISTED_CBU, 500, { movementType: 'DEPOSIT' }),
        );
        expect({ status: deposit.status, state: deposit.body.status as unknown }).toEqual({
          status: 201,
          state: 'INICIADO',
        });
        const owner = await api().delete(`${base}/${ownerId}`).set('Authorization', bearer(tokenA));
        expectForbidden(owner, 'INVALID_STATE');
        expect(owner.body.message).toMatch(/transfers in flight/);
        expectForbidden(
          await api().delete(path(account.uuid)).set('Authorization', bearer(tokenA)),
          'INVALID_STATE',
        );
        const rows = (await t.dataSource.query(
          `SELECT w.status, o.deleted_at FROM wallet_accounts w
             JOIN ${type === 'USER' ? 'users' : 'companies'} o ON o.id = w.owner_id WHERE w.id = $1`,
          [account.uuid],
        )) as { status: string; deleted_at: Date | null }[];
        expect(rows).toEqual([{ status: 'ACTIVE', deleted_at: null }]);
      }
    });
  });
});
