import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import {
  allPages,
  bearer,
  companyBody,
  countRows,
  dashed,
  expectNotFound,
  expectUnauthorized,
  expectValidation,
  legalAddress,
  newCuit,
  userBody,
  withWrongCheckDigit,
  byPath,
  expectRefusedWithoutWrites,
  kycDataRoutes,
  ownerRoutes,
  UUID,
  type CreateUserBody,
  type HistoryEntry,
  type ValidationItem,
} from './support/identity.js';
import { commitRightAfterWrite } from './support/database.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { startWithTwoApplications } from './support/two-applications.js';
import { openAccount as openWalletAccount, setBalance as setWalletBalance } from './support/wallet.js';

interface UserView {
  uuid: string;
  firstName: string;
  lastName: string;
  birthday: string;
  civilStatus: string;
  legalAddress: Record<string, string>;
  account: unknown;
  legalInformation: {
    taxIdType: string;
    taxId: string;
    taxCondition: string;
    category: string;
    taxExempt: boolean;
  };
}

interface UserKycView {
  uuid: string | null;
  userId: string;
  civilStatus: string | null;
  isPep: boolean | null;
  isSOAUIF: boolean | null;
  isBlackListed: boolean | null;
}

const USER_KEYS = [
  'account',
  'birthday',
  'civilStatus',
  'firstName',
  'lastName',
  'legalAddress',
  'legalInformation',
  'uuid',
];

/** The User a POST of userBody() answers: its values in the output form, no account. */
const userView = (body: CreateUserBody, uuid: unknown) => ({
  uuid,
  firstName: 'María',
  lastName: 'González',
  birthday: '1990-04-21',
  civilStatus: 'single',
  legalAddress: legalAddress(),
  account: null,
  legalInformation: {
    taxIdType: 'CUIL',
    taxId: body.legalInformation.taxId,
    taxCondition: 'OTHERS',
    category: 'Consumidor final',
    taxExempt: false,
  },
});

const daysFromNow = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

/** A deep copy of `body` with the value at a dotted path removed or replaced. */
function edit(body: object, path: string, value?: unknown, remove = false): Record<string, unknown> {
  const copy = structuredClone(body) as Record<string, unknown>;
  const keys = path.split('.');
  let node = copy;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = keys[keys.length - 1];
  if (remove) delete node[last];
  else node[last] = value;
  return copy;
}
const without = (body: object, path: string) => edit(body, path, undefined, true);
const withValue = (body: object, path: string, value: unknown) => edit(body, path, value);

describe('identity: users (real database)', () => {
  let t: TestApp;
  let appA: TestClient;
  let appB: TestClient;
  let tokenA: string;
  let tokenB: string;

  beforeAll(async () => {
    ({ t, appA, appB, tokenA, tokenB } = await startWithTwoApplications('users'));
  });
  afterAll(() => t.close());

  const api = () => request(t.http);
  const {
    create: createUser,
    get: getUser,
    patch: patchUser,
    remove: deleteUser,
    list: listUsers,
  } = ownerRoutes(
    () => t.http,
    '/v1/users',
    () => tokenA,
  );

  /** Creates a user and returns its view (asserting the 201). */
  const created = async (body: CreateUserBody | object = userBody(), token = tokenA): Promise<UserView> => {
    const response = await createUser(body, token);
    expect(response.status).toBe(201);
    return response.body as UserView;
  };

  /** Runs a request that must be refused and asserts that no users row was written. */
  const refused = (send: () => Promise<request.Response>): Promise<request.Response> =>
    expectRefusedWithoutWrites(t.dataSource, ['users'], send);
  /** A refused POST /v1/users: returns the validation items. */
  const refusedCreate = async (body: unknown, token = tokenA): Promise<ValidationItem[]> =>
    expectValidation(await refused(() => createUser(body, token)));

  const userRow = async (uuid: string) => {
    const rows = (await t.dataSource.query(
      `SELECT first_name, last_name, birthdate::text AS birthdate, sex, nationality, email, legal_name, tax_id,
              deleted_at FROM users WHERE id = $1`,
      [uuid],
    )) as {
      first_name: string;
      last_name: string;
      birthdate: string;
      sex: string;
      nationality: string;
      email: string | null;
      legal_name: string | null;
      tax_id: string;
      deleted_at: Date | null;
    }[];
    return rows[0];
  };

  describe('POST /v1/users', () => {
    it('creates a user and answers the User, exactly', async () => {
      const body = userBody();
      const response = await createUser(body);
      expect(response.status).toBe(201);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(response.body).sort()).toStrictEqual(USER_KEYS);
      expect(response.body).toStrictEqual(userView(body, expect.stringMatching(UUID)));
      const row = await userRow(response.body.uuid);
      expect(row).toMatchObject({
        birthdate: '1990-04-21',
        sex: 'female',
        nationality: 'AR',
        deleted_at: null,
      });
    });

    it('echoes all nine legalAddress fields (floor and apartment may be empty)', async () => {
      const address = {
        streetName: 'Calle 7',
        streetNumber: '742',
        floor: '',
        apartment: '',
        zipCode: 'B1900',
        neighborhood: 'Centro',
        city: 'La Plata',
        region: 'Buenos Aires',
        country: 'UY',
      };
      const user = await created({ ...userBody(), legalAddress: address });
      expect(user.legalAddress).toStrictEqual(address);
      expect((await getUser(user.uuid)).body.legalAddress).toStrictEqual(address);
    });

    describe('input form → output form', () => {
      it.each([
        ['cuil', 'CUIL'],
        ['cuit', 'CUIT'],
      ])('taxIdType %s → %s', async (input, output) => {
        const user = await created(withValue(userBody(), 'legalInformation.taxIdType', input));
        expect(user.legalInformation.taxIdType).toBe(output);
        expect((await getUser(user.uuid)).body.legalInformation.taxIdType).toBe(output);
      });

      it.each([
        ['vatRegistered', 'VAT_REGISTERED'],
        ['others', 'OTHERS'],
      ])('taxCondition %s → %s', async (input, output) => {
        const user = await created(withValue(userBody(), 'legalInformation.taxCondition', input));
        expect(user.legalInformation.taxCondition).toBe(output);
        expect((await getUser(user.uuid)).body.legalInformation.taxCondition).toBe(output);
      });

      it.each([
        ['consumidorFinal', 'Consumidor final'],
        ['monotributista', 'Monotributista'],
        ['responsableInscripto', 'Responsable inscripto'],
      ])('category %s → %s', async (input, output) => {
        const user = await created(withValue(userBody(), 'legalInformation.category', input));
        expect(user.legalInformation.category).toBe(output);
        expect((await getUser(user.uuid)).body.legalInformation.category).toBe(output);
      });

      it.each([true, false])('taxExempt %s is kept', async (taxExempt) => {
        const user = await created(withValue(userBody(), 'legalInformation.taxExempt', taxExempt));
        expect(user.legalInformation.taxExempt).toBe(taxExempt);
      });

      it('birthdate becomes birthday; there is no birthdate, sex or nationality in the User', async () => {
        const user = await created({ ...userBody(), birthdate: '1975-12-31' });
        expect(user.birthday).toBe('1975-12-31');
        expect(user).not.toHaveProperty('birthdate');
        expect(user).not.toHaveProperty('sex');
        expect(user).not.toHaveProperty('nationality');
      });

      it('a tax id written with dashes is answered and stored as 11 digits', async () => {
        const cuil = newCuit('27');
        const user = await created(userBody(dashed(cuil)));
        expect(user.legalInformation.taxId).toBe(cuil);
        expect((await userRow(user.uuid)).tax_id).toBe(cuil);
      });

      it.each(['male', 'female', 'other'])('accepts sex %s', async (sex) => {
        const user = await created({ ...userBody(), sex });
        expect((await userRow(user.uuid)).sex).toBe(sex);
      });

      it.each(['single', 'married', 'divorced'])(
        'accepts and answers civilStatus %s',
        async (civilStatus) => {
          const user = await created({ ...userBody(), civilStatus });
          expect(user.civilStatus).toBe(civilStatus);
        },
      );
    });

    describe('CUIL/CUIT', () => {
      it.each(['20', '23', '24', '27'])(
        'accepts a valid number with person prefix %s (cuil and cuit)',
        async (prefix) => {
          for (const taxIdType of ['cuil', 'cuit']) {
            const cuit = newCuit(prefix);
            const user = await created(withValue(userBody(cuit), 'legalInformation.taxIdType', taxIdType));
            expect(user.legalInformation.taxId).toBe(cuit);
          }
        },
      );

      it.each([
        ['a wrong check digit', () => withWrongCheckDigit(newCuit('20'))],
        ['a wrong check digit, dashed', () => dashed(withWrongCheckDigit(newCuit('27')))],
        ['10 digits', () => newCuit('20').slice(0, 10)],
        ['12 digits', () => `${newCuit('20')}0`],
        ['letters', () => '20-ABCDEFGH-6'],
        ['a letter O for a zero', () => newCuit('20').replace(/0/g, 'O')],
        ['the company prefix 30', () => newCuit('30')],
        ['the company prefix 33', () => newCuit('33')],
        ['an unknown prefix 21', () => newCuit('21')],
      ])('refuses %s at legalInformation.taxId (invalid)', async (_label, taxId) => {
        const items = await refusedCreate(userBody(taxId()));
        expect(items).toStrictEqual([
          { path: 'legalInformation.taxId', message: expect.any(String), type: 'invalid' },
        ]);
      });

      it('refuses the same tax id twice in one application (duplicate), dashed or not', async () => {
        const cuil = newCuit('20');
        await created(userBody(cuil));
        expect(await refusedCreate(userBody(cuil))).toStrictEqual([
          { path: 'legalInformation.taxId', message: expect.any(String), type: 'duplicate' },
        ]);
        expect(byPath(await refusedCreate(userBody(dashed(cuil))))).toStrictEqual({
          'legalInformation.taxId': 'duplicate',
        });
        // Declared as cuit this time: the number is what is unique.
        expect(
          byPath(await refusedCreate(withValue(userBody(cuil), 'legalInformation.taxIdType', 'cuit'))),
        ).toStrictEqual({ 'legalInformation.taxId': 'duplicate' });
      });

      it('two concurrent requests with the same tax id: one 201, one duplicate', async () => {
        const body = userBody();
        const before = await countRows(t.dataSource, 'users');
        const responses = await Promise.all([createUser(body), createUser(body), createUser(body)]);
        expect(responses.map((response) => response.status).sort()).toStrictEqual([201, 400, 400]);
        for (const response of responses.filter((r) => r.status === 400)) {
          expect(expectValidation(response)).toStrictEqual([
            { path: 'legalInformation.taxId', message: expect.any(String), type: 'duplicate' },
          ]);
        }
        expect(await countRows(t.dataSource, 'users')).toBe(before + 1);
      });

      it('accepts the same tax id in another application', async () => {
        const cuil = newCuit('23');
        const inA = await created(userBody(cuil), tokenA);
        const inB = await created(userBody(cuil), tokenB);
        expect(inB.uuid).not.toBe(inA.uuid);
        expect(inB.legalInformation.taxId).toBe(cuil);
      });

      it('accepts the tax id again once its user is deleted', async () => {
        const cuil = newCuit('24');
        const first = await created(userBody(cuil));
        expect((await deleteUser(first.uuid)).status).toBe(204);
        const second = await created(userBody(cuil));
        expect(second.uuid).not.toBe(first.uuid);
        expect(second.legalInformation.taxId).toBe(cuil);
        // The deleted user's row is still there, with the same number.
        expect((await userRow(first.uuid)).tax_id).toBe(cuil);
      });
    });

    describe('validation (nothing is written)', () => {
      it('names every missing required field with type required', async () => {
        const items = await refusedCreate({});
        expect(byPath(items)).toStrictEqual({
          firstName: 'required',
          lastName: 'required',
          birthdate: 'required',
          sex: 'required',
          civilStatus: 'required',
          nationality: 'required',
          legalInformation: 'required',
          legalAddress: 'required',
        });
      });

      it.each([
        'firstName',
        'lastName',
        'birthdate',
        'sex',
        'civilStatus',
        'nationality',
        'legalInformation',
        'legalAddress',
        'legalInformation.taxIdType',
        'legalInformation.taxId',
        'legalInformation.taxCondition',
        'legalInformation.category',
        'legalInformation.taxExempt',
        'legalAddress.streetName',
        'legalAddress.streetNumber',
        'legalAddress.floor',
        'legalAddress.apartment',
        'legalAddress.zipCode',
        'legalAddress.neighborhood',
        'legalAddress.city',
        'legalAddress.region',
        'legalAddress.country',
      ])('missing %s → required at its path', async (path) => {
        const items = await refusedCreate(without(userBody(), path));
        expect(items).toStrictEqual([{ path, message: expect.any(String), type: 'required' }]);
      });

      it('treats null as missing', async () => {
        expect(
          byPath(await refusedCreate(withValue(userBody(), 'legalAddress.zipCode', null))),
        ).toStrictEqual({
          'legalAddress.zipCode': 'required',
        });
        expect(byPath(await refusedCreate({ ...userBody(), firstName: null }))).toStrictEqual({
          firstName: 'required',
        });
      });

      it('refuses wrong types and empty strings (invalid)', async () => {
        const cases: [string, unknown][] = [
          ['firstName', 42],
          ['firstName', ''],
          // Blank: the service stores names trimmed, so it was stored as "" (decision 0091).
          ['firstName', '   '],
          ['lastName', '\t \n'],
          ['lastName', ['González']],
          ['legalInformation.taxExempt', 'false'],
          ['legalInformation.taxId', 20123456786],
          ['legalAddress.zipCode', ''],
          ['legalAddress.streetNumber', 742],
          ['legalAddress', 'Avenida Corrientes 1234'],
          ['legalInformation', [userBody().legalInformation]],
        ];
        for (const [path, value] of cases) {
          expect(byPath(await refusedCreate(withValue(userBody(), path, value)))).toStrictEqual({
            [path]: 'invalid',
          });
        }
      });

      it('refuses over-long strings', async () => {
        expect(byPath(await refusedCreate({ ...userBody(), firstName: 'a'.repeat(101) }))).toStrictEqual({
          firstName: 'invalid',
        });
        expect(
          byPath(await refusedCreate(withValue(userBody(), 'legalAddress.city', 'c'.repeat(101)))),
        ).toStrictEqual({ 'legalAddress.city': 'invalid' });
      });

      it.each([
        ['sex', 'M'],
        ['sex', 'MALE'],
        ['sex', 'f'],
        ['civilStatus', 'widowed'],
        ['civilStatus', 'SINGLE'],
        ['legalInformation.taxIdType', 'CUIL'],
        ['legalInformation.taxIdType', 'dni'],
        ['legalInformation.taxCondition', 'VAT_REGISTERED'],
        ['legalInformation.category', 'Consumidor final'],
        ['legalInformation.category', 'exento'],
      ])('refuses %s %p (not in the enum)', async (path, value) => {
        const items = await refusedCreate(withValue(userBody(), path, value));
        expect(items).toStrictEqual([{ path, message: expect.any(String), type: 'invalid' }]);
      });

      it.each([
        ['not a real date', '2023-02-30'],
        ['not a real date (month 13)', '1990-13-01'],
        ['in the future', daysFromNow(2)],
        ['far in the future', '2999-01-01'],
        ['day/month/year', '21/04/1990'],
        ['without zero padding', '1990-4-21'],
        ['a date-time', '1990-04-21T00:00:00Z'],
        ['empty', ''],
        ['before 1900', '1899-12-31'],
      ])('refuses a birthdate %s', async (_label, birthdate) => {
        const items = await refusedCreate({ ...userBody(), birthdate });
        expect(items).toStrictEqual([{ path: 'birthdate', message: expect.any(String), type: 'invalid' }]);
      });

      it('accepts a leap day that exists', async () => {
        expect((await created({ ...userBody(), birthdate: '2000-02-29' })).birthday).toBe('2000-02-29');
        expect(byPath(await refusedCreate({ ...userBody(), birthdate: '2001-02-29' }))).toStrictEqual({
          birthdate: 'invalid',
        });
      });

      it.each(['XX', 'ar', 'Ar', 'ARG', 'A', '', 'EU'])(
        'refuses nationality and country %p',
        async (code) => {
          expect(await refusedCreate({ ...userBody(), nationality: code })).toStrictEqual([
            { path: 'nationality', message: expect.any(String), type: 'invalid' },
          ]);
          expect(await refusedCreate(withValue(userBody(), 'legalAddress.country', code))).toStrictEqual([
            { path: 'legalAddress.country', message: expect.any(String), type: 'invalid' },
          ]);
        },
      );

      it.each([
        ['at the top level', 'middleName'],
        ['inside legalAddress', 'legalAddress.department'],
        ['inside legalInformation', 'legalInformation.ivaCondition'],
      ])('refuses an unknown property %s', async (_label, path) => {
        const items = await refusedCreate(withValue(userBody(), path, 'x'));
        expect(items).toStrictEqual([{ path, message: expect.any(String), type: 'invalid' }]);
      });

      it.each([
        ['uuid', randomUUID()],
        ['id', randomUUID()],
        ['appId', randomUUID()],
        ['account', { uuid: randomUUID(), balance: 1_000_000 }],
        ['balance', 1_000_000],
        ['birthday', '1990-04-21'],
        ['email', 'maria@example.com'],
        ['deletedAt', null],
        ['createdAt', '2020-01-01T00:00:00Z'],
      ])('refuses mass assignment of %s', async (path, value) => {
        const items = await refusedCreate({ ...userBody(), [path]: value });
        expect(items).toStrictEqual([{ path, message: expect.any(String), type: 'invalid' }]);
      });

      it('refuses a body that is not a JSON object', async () => {
        for (const raw of ['[]', '"user"', 'null', '{"firstName": ']) {
          const response = await refused(() =>
            api()
              .post('/v1/users')
              .set('Authorization', bearer(tokenA))
              .set('Content-Type', 'application/json')
              .send(raw),
          );
          expect(expectValidation(response)).toStrictEqual([
            { path: '', message: expect.any(String), type: 'invalid' },
          ]);
        }
      });

      it('reports several problems at once', async () => {
        const body = withValue(
          withValue({ ...userBody(), sex: 'M', nationality: 'ar' }, 'legalAddress.zipCode', ''),
          'legalInformation.extra',
          1,
        );
        expect(byPath(await refusedCreate(body))).toStrictEqual({
          sex: 'invalid',
          nationality: 'invalid',
          'legalAddress.zipCode': 'invalid',
          'legalInformation.extra': 'invalid',
        });
      });

      it('refuses without credentials (401) and writes nothing', async () => {
        expectUnauthorized(await refused(() => api().post('/v1/users').send(userBody())));
        expectUnauthorized(
          await refused(() =>
            api().post('/v1/users').set('Authorization', 'Bearer garbage').send(userBody()),
          ),
        );
      });
    });
  });

  describe('GET /v1/users/all', () => {
    it('answers a plain array of Users of the caller application, oldest first', async () => {
      const app = await registerClient(t.app, 'list-shape');
      const token = await accessToken(t.http, app);
      const first = await created(userBody(), token);
      const second = await created({ ...userBody(), firstName: 'Juan', civilStatus: 'married' }, token);
      const response = await listUsers({}, token);
      expect(response.status).toBe(200);
      expect(response.headers['x-next-cursor']).toBeUndefined();
      expect(response.body).toStrictEqual([first, second]);
    });

    it('answers 200 [] for an application without users', async () => {
      const app = await registerClient(t.app, 'list-empty');
      const response = await listUsers({}, await accessToken(t.http, app));
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual([]);
      expect(response.headers['x-next-cursor']).toBeUndefined();
    });

    it("never lists another application's users", async () => {
      const inB = await created(userBody(), tokenB);
      const idsOfA = ((await listUsers({ limit: 500 })).body as UserView[]).map((user) => user.uuid);
      expect(idsOfA.length).toBeGreaterThan(0);
      expect(idsOfA).not.toContain(inB.uuid);
      const idsOfB = ((await listUsers({ limit: 500 }, tokenB)).body as UserView[]).map((user) => user.uuid);
      expect(idsOfB).toContain(inB.uuid);
      const rows = (await t.dataSource.query(
        `SELECT id FROM users WHERE app_id = $1 AND deleted_at IS NULL`,
        [appB.appId],
      )) as { id: string }[];
      expect(idsOfB.sort()).toStrictEqual(rows.map((row) => row.id).sort());
    });

    it('is refused to a user token (client credentials only) and without credentials', async () => {
      const user = await created();
      expectUnauthorized(await listUsers({}, await subjectToken(appA, user.uuid)));
      expectUnauthorized(await api().get('/v1/users/all'));
    });

    describe('pagination', () => {
      let token: string;
      let ids: string[];
      let appId: string;

      beforeAll(async () => {
        const app = await registerClient(t.app, 'list-pages');
        appId = app.appId;
        token = await accessToken(t.http, app);
        ids = [];
        for (let i = 0; i < 7; i++)
          ids.push((await created({ ...userBody(), firstName: `User ${i}` }, token)).uuid);
      });

      it('7 users with limit 3: pages of 3, 3 and 1 following X-Next-Cursor, the last without it', async () => {
        const { pages, cursors } = await allPages<UserView>(t.http, '/v1/users/all', token, 3);
        expect(pages.map((page) => page.length)).toStrictEqual([3, 3, 1]);
        expect(cursors).toHaveLength(2);
        const seen = pages.flat().map((user) => user.uuid);
        expect(new Set(seen).size).toBe(seen.length);
        expect(seen).toStrictEqual(ids);
        expect(pages[2][0].firstName).toBe('User 6');
      });

      it('a limit equal to the number of users gives one page without a cursor', async () => {
        const response = await listUsers({ limit: 7 }, token);
        expect(response.status).toBe(200);
        expect((response.body as UserView[]).map((user) => user.uuid)).toStrictEqual(ids);
        expect(response.headers['x-next-cursor']).toBeUndefined();
        const { pages } = await allPages<UserView>(t.http, '/v1/users/all', token, 1);
        expect(pages.map((page) => page.length)).toStrictEqual([1, 1, 1, 1, 1, 1, 1]);
        const { pages: big } = await allPages<UserView>(t.http, '/v1/users/all', token, 500);
        expect(big).toHaveLength(1);
        expect(big[0]).toHaveLength(7);
      });

      it('skips deleted users without breaking the pages', async () => {
        const app = await registerClient(t.app, 'list-pages-deleted');
        const own = await accessToken(t.http, app);
        const mine: string[] = [];
        for (let i = 0; i < 5; i++) mine.push((await created(userBody(), own)).uuid);
        expect((await deleteUser(mine[1], own)).status).toBe(204);
        expect((await deleteUser(mine[3], own)).status).toBe(204);
        const { pages } = await allPages<UserView>(t.http, '/v1/users/all', own, 2);
        expect(pages.map((page) => page.length)).toStrictEqual([2, 1]);
        expect(pages.flat().map((user) => user.uuid)).toStrictEqual([mine[0], mine[2], mine[4]]);
      });

      it('users created in the same instant are all served once, in uuid order', async () => {
        const app = await registerClient(t.app, 'list-pages-ties');
        const own = await accessToken(t.http, app);
        const mine: string[] = [];
        for (let i = 0; i < 5; i++) mine.push((await created(userBody(), own)).uuid);
        await t.dataSource.query(`UPDATE users SET created_at = '2024-01-01T00:00:00Z' WHERE app_id = $1`, [
          app.appId,
        ]);
        const { pages } = await allPages<UserView>(t.http, '/v1/users/all', own, 2);
        expect(pages.map((page) => page.length)).toStrictEqual([2, 2, 1]);
        expect(pages.flat().map((user) => user.uuid)).toStrictEqual([...mine].sort());
      });

      it('orders by creation time, not by uuid', async () => {
        const app = await registerClient(t.app, 'list-pages-order');
        const own = await accessToken(t.http, app);
        const mine: string[] = [];
        for (let i = 0; i < 4; i++) mine.push((await created(userBody(), own)).uuid);
        const newestFirst = [...mine].sort().reverse();
        for (const [index, id] of newestFirst.entries()) {
          await t.dataSource.query(`UPDATE users SET created_at = $1 WHERE id = $2`, [
            new Date(Date.UTC(2024, 0, 1, 0, 0, index)).toISOString(),
            id,
          ]);
        }
        const { pages } = await allPages<UserView>(t.http, '/v1/users/all', own, 3);
        expect(pages.flat().map((user) => user.uuid)).toStrictEqual(newestFirst);
      });

      it.each([['0'], ['501'], ['abc'], ['-1'], ['1.5'], [''], ['1e2'], ['0x10'], [' 3']])(
        'refuses limit %p',
        async (limit) => {
          const response = await listUsers({ limit }, token);
          expect(byPath(expectValidation(response))).toStrictEqual({ limit: 'invalid' });
        },
      );

      it('accepts limit 1 and 500', async () => {
        expect((await listUsers({ limit: 1 }, token)).body).toHaveLength(1);
        expect((await listUsers({ limit: 500 }, token)).body).toHaveLength(7);
      });

      it.each([
        ['garbage', 'garbage'],
        [
          'base64url of something else',
          Buffer.from('2024-01-01T00:00:00.000Z|not-a-uuid').toString('base64url'),
        ],
        ['a date that is not one', Buffer.from(`yesterday|${randomUUID()}`).toString('base64url')],
        ['too long', 'a'.repeat(201)],
      ])('refuses a cursor that is %s', async (_label, cursor) => {
        const response = await listUsers({ cursor }, token);
        expect(byPath(expectValidation(response))).toStrictEqual({ cursor: 'invalid' });
      });

      it('refuses an unknown query parameter', async () => {
        const response = await listUsers({ offset: 3 }, token);
        expect(byPath(expectValidation(response))).toStrictEqual({ offset: 'invalid' });
        expect(byPath(expectValidation(await listUsers({ limit: 3, page: 2 }, token)))).toStrictEqual({
          page: 'invalid',
        });
      });

      it("a cursor used by another application only moves within that application's users", async () => {
        const cursor = (await listUsers({ limit: 1 }, token)).headers['x-next-cursor'] as string;
        expect(cursor).toEqual(expect.any(String));
        const elsewhere = await listUsers({ cursor, limit: 500 }, tokenA);
        expect(elsewhere.status).toBe(200);
        const theirs = (elsewhere.body as UserView[]).map((user) => user.uuid);
        for (const id of ids) expect(theirs).not.toContain(id);
        const [{ n }] = (await t.dataSource.query(`SELECT count(*)::int AS n FROM users WHERE app_id = $1`, [
          appId,
        ])) as { n: number }[];
        expect(n).toBe(7);
      });
    });
  });

  describe('GET /v1/users/{uuid}', () => {
    it('answers the User as created', async () => {
      const user = await created();
      const response = await getUser(user.uuid);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual(user);
    });

    it('answers an unknown uuid with 404 and the uuid as item', async () => {
      const unknown = randomUUID();
      expectNotFound(await getUser(unknown), unknown);
    });

    it('refuses a malformed uuid with 400', async () => {
      for (const bad of ['not-a-uuid', '123', `${randomUUID()}x`]) {
        expectValidation(await getUser(bad));
      }
    });

    it("answers another application's user with 404", async () => {
      const user = await created(userBody(), tokenB);
      expectNotFound(await getUser(user.uuid, tokenA), user.uuid);
      expect((await getUser(user.uuid, tokenB)).status).toBe(200);
    });

    it('is refused to a user token, even its own (client credentials only)', async () => {
      const user = await created();
      expectUnauthorized(await getUser(user.uuid, await subjectToken(appA, user.uuid)));
      expectUnauthorized(await api().get(`/v1/users/${user.uuid}`));
    });
  });

  describe('PATCH /v1/users/{uuid}', () => {
    it('changes firstName, lastName and birthday and answers the User', async () => {
      const user = await created();
      const response = await patchUser(user.uuid, {
        firstName: 'Ana',
        lastName: 'Pérez',
        birthday: '1985-01-15',
      });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        ...user,
        firstName: 'Ana',
        lastName: 'Pérez',
        birthday: '1985-01-15',
      });
      expect((await getUser(user.uuid)).body).toStrictEqual(response.body);
    });

    it.each([
      ['M', 'male'],
      ['F', 'female'],
      ['O', 'other'],
    ])('takes sex %s (stored as %s)', async (short, long) => {
      const user = await created({ ...userBody(), sex: long === 'male' ? 'female' : 'male' });
      const response = await patchUser(user.uuid, { sex: short });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual(user);
      expect((await userRow(user.uuid)).sex).toBe(long);
    });

    it('refuses the create form of sex (male) and other values', async () => {
      const user = await created();
      for (const sex of ['male', 'female', 'other', 'm', 'X']) {
        expect(expectValidation(await patchUser(user.uuid, { sex }))).toStrictEqual([
          { path: 'sex', message: expect.any(String), type: 'invalid' },
        ]);
      }
      expect((await userRow(user.uuid)).sex).toBe('female');
    });

    it('takes email, legalName (an email, as the interface says) and nationality', async () => {
      const user = await created();
      const response = await patchUser(user.uuid, {
        email: 'maria@example.com',
        legalName: 'legal@example.com',
        nationality: 'BR',
      });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual(user);
      expect(await userRow(user.uuid)).toMatchObject({
        email: 'maria@example.com',
        legal_name: 'legal@example.com',
        nationality: 'BR',
      });
    });

    it('refuses a legalName or an email that is not an email', async () => {
      const user = await created();
      expect(
        byPath(expectValidation(await patchUser(user.uuid, { legalName: 'María González' }))),
      ).toStrictEqual({
        legalName: 'invalid',
      });
      expect(byPath(expectValidation(await patchUser(user.uuid, { email: 'maria@' })))).toStrictEqual({
        email: 'invalid',
      });
      expect(await userRow(user.uuid)).toMatchObject({ email: null, legal_name: null });
    });

    it('takes a valid taxId (dashes accepted) and answers it as digits', async () => {
      const user = await created();
      const cuil = newCuit('23');
      const response = await patchUser(user.uuid, { taxId: dashed(cuil) });
      expect(response.status).toBe(200);
      expect(response.body.legalInformation).toStrictEqual({ ...user.legalInformation, taxId: cuil });
      // Its own tax id again is not a duplicate.
      expect((await patchUser(user.uuid, { taxId: cuil })).status).toBe(200);
    });

    it('refuses an invalid taxId at path taxId', async () => {
      const user = await created();
      for (const taxId of [withWrongCheckDigit(newCuit('20')), '2012345678', 'abc', newCuit('30')]) {
        expect(expectValidation(await patchUser(user.uuid, { taxId }))).toStrictEqual([
          { path: 'taxId', message: expect.any(String), type: 'invalid' },
        ]);
      }
      expect((await userRow(user.uuid)).tax_id).toBe(user.legalInformation.taxId);
    });

    it("refuses another user's taxId with duplicate at taxId, and changes nothing", async () => {
      const other = await created();
      const user = await created();
      const response = await patchUser(user.uuid, {
        firstName: 'Changed',
        taxId: other.legalInformation.taxId,
      });
      expect(expectValidation(response)).toStrictEqual([
        { path: 'taxId', message: expect.any(String), type: 'duplicate' },
      ]);
      expect(await userRow(user.uuid)).toMatchObject({
        first_name: 'María',
        tax_id: user.legalInformation.taxId,
      });
    });

    it('refuses other wrong values and changes nothing', async () => {
      const user = await created();
      const cases: [Record<string, unknown>, string][] = [
        [{ birthday: daysFromNow(3) }, 'birthday'],
        [{ birthday: '2023-02-30' }, 'birthday'],
        [{ birthday: '15/01/1985' }, 'birthday'],
        [{ nationality: 'ar' }, 'nationality'],
        [{ nationality: 'XX' }, 'nationality'],
        [{ nationality: 'ARG' }, 'nationality'],
        [{ firstName: '' }, 'firstName'],
        [{ firstName: 7 }, 'firstName'],
        [{ civilStatus: 'married' }, 'civilStatus'],
        [{ uuid: randomUUID() }, 'uuid'],
        [{ appId: appB.appId }, 'appId'],
        [{ legalAddress: legalAddress() }, 'legalAddress'],
      ];
      for (const [body, path] of cases) {
        const response = await patchUser(user.uuid, { lastName: 'Changed', ...body });
        expect(byPath(expectValidation(response))).toStrictEqual({ [path]: 'invalid' });
      }
      expect((await getUser(user.uuid)).body).toStrictEqual(user);
    });

    it('an empty body changes nothing and answers the User', async () => {
      const user = await created();
      const response = await patchUser(user.uuid, {});
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual(user);
    });

    it('answers 404 for an unknown user and for another application’s, 400 for a malformed uuid', async () => {
      const unknown = randomUUID();
      expectNotFound(await patchUser(unknown, { firstName: 'X' }), unknown);
      const inB = await created(userBody(), tokenB);
      expectNotFound(await patchUser(inB.uuid, { firstName: 'X' }), inB.uuid);
      expect((await userRow(inB.uuid)).first_name).toBe('María');
      expectValidation(await patchUser('nope', { firstName: 'X' }));
    });
  });

  describe('DELETE /v1/users/{uuid}', () => {
    it('answers 204 without a body; afterwards the user is gone from the API but kept in the table', async () => {
      const user = await created();
      const response = await deleteUser(user.uuid);
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expect(response.headers['content-type']).toBeUndefined();

      expectNotFound(await getUser(user.uuid), user.uuid);
      expectNotFound(await patchUser(user.uuid, { firstName: 'Again' }), user.uuid);
      expectNotFound(await deleteUser(user.uuid), user.uuid);
      const listed = ((await listUsers({ limit: 500 })).body as UserView[]).map((item) => item.uuid);
      expect(listed).not.toContain(user.uuid);

      const row = await userRow(user.uuid);
      expect(row).toBeDefined();
      expect(row.deleted_at).toBeInstanceOf(Date);
      expect(row.first_name).toBe('María');
    });

    it('answers 404 for an unknown user and another application’s (which stays), 400 for a malformed uuid', async () => {
      const unknown = randomUUID();
      expectNotFound(await deleteUser(unknown), unknown);
      const inB = await created(userBody(), tokenB);
      expectNotFound(await deleteUser(inB.uuid, tokenA), inB.uuid);
      expect((await userRow(inB.uuid)).deleted_at).toBeNull();
      expect((await getUser(inB.uuid, tokenB)).status).toBe(200);
      expectValidation(await deleteUser('not-a-uuid'));
    });

    it('is refused without credentials', async () => {
      const user = await created();
      expectUnauthorized(await api().delete(`/v1/users/${user.uuid}`));
      expect((await userRow(user.uuid)).deleted_at).toBeNull();
    });
  });

  describe('a deletion committed right after a change, before its answer could be read (decision 0094)', () => {
    it('POST: the user registered is answered as stored (201), not 500; the deletion stands', async () => {
      const sub = randomUUID();
      const body = userBody();
      const token = await subjectToken(appA, sub);
      const response = await commitRightAfterWrite(
        t.dataSource,
        () => createUser(body, token),
        'users',
        'UPDATE users SET deleted_at = now() WHERE id = $1',
        [sub],
      );
      expect(response.status).toBe(201);
      expect(response.body).toStrictEqual(userView(body, sub));
      expect((await userRow(sub)).deleted_at).toBeInstanceOf(Date);
    });

    it('PATCH: the change committed is answered (200), not 404; the deletion stands', async () => {
      const user = await created();
      const response = await commitRightAfterWrite(
        t.dataSource,
        () => patchUser(user.uuid, { firstName: 'Ana' }),
        'users',
        'UPDATE users SET deleted_at = now() WHERE id = $1',
        [user.uuid],
      );
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ ...user, firstName: 'Ana' });
      expect(await userRow(user.uuid)).toMatchObject({ first_name: 'Ana', deleted_at: expect.any(Date) });
    });
  });

  describe('bearer principal (user token: sub = the user)', () => {
    it('self-onboarding: POST with a user token creates the user named by sub, once', async () => {
      const sub = randomUUID();
      const token = await subjectToken(appA, sub);
      const user = await created(userBody(), token);
      expect(user.uuid).toBe(sub);
      expect((await getUser(sub)).body).toStrictEqual(user);

      const again = await refusedCreate(userBody(), token);
      expect(again).toStrictEqual([
        { path: expect.any(String), message: expect.any(String), type: 'duplicate' },
      ]);
    });

    it('two concurrent self-onboardings with one token: one 201, one duplicate', async () => {
      const sub = randomUUID();
      const token = await subjectToken(appA, sub);
      const before = await countRows(t.dataSource, 'users');
      const responses = await Promise.all([createUser(userBody(), token), createUser(userBody(), token)]);
      expect(responses.map((response) => response.status).sort()).toStrictEqual([201, 400]);
      const failed = responses.find((response) => response.status === 400) as request.Response;
      expect(expectValidation(failed).map((item) => item.type)).toStrictEqual(['duplicate']);
      expect(await countRows(t.dataSource, 'users')).toBe(before + 1);
      expect((await getUser(sub)).status).toBe(200);
    });

    it('a sub names one owner: the user of a token cannot also register a company, nor the reverse, even at once', async () => {
      const createCompany = (token: string) =>
        api().post('/v1/companies').set('Authorization', bearer(token)).send(companyBody());
      const userFirst = await subjectToken(appA, randomUUID());
      await created(userBody(), userFirst);
      const companies = await countRows(t.dataSource, 'companies');
      expect(expectValidation(await createCompany(userFirst))).toStrictEqual([
        { path: '', message: 'the user or company of this token is already registered', type: 'duplicate' },
      ]);
      const companyFirst = await subjectToken(appA, randomUUID());
      expect((await createCompany(companyFirst)).status).toBe(201);
      expect(await refusedCreate(userBody(), companyFirst)).toStrictEqual([
        { path: '', message: 'the user or company of this token is already registered', type: 'duplicate' },
      ]);
      expect(await countRows(t.dataSource, 'companies')).toBe(companies + 1);
      // Sent together: one of the two is registered, the other refused.
      const both = await subjectToken(appA, randomUUID());
      const [user, company] = await Promise.all([createUser(userBody(), both), createCompany(both)]);
      expect([user.status, company.status].sort()).toStrictEqual([201, 400]);
    });

    it('self-onboarding with a taken tax id is a duplicate at legalInformation.taxId', async () => {
      const existing = await created();
      const token = await subjectToken(appA, randomUUID());
      expect(await refusedCreate(userBody(existing.legalInformation.taxId), token)).toStrictEqual([
        { path: 'legalInformation.taxId', message: expect.any(String), type: 'duplicate' },
      ]);
    });

    it('patches and deletes its own user', async () => {
      const user = await created();
      const token = await subjectToken(appA, user.uuid);
      const patched = await patchUser(user.uuid, { email: 'own@example.com' }, token);
      expect(patched.status).toBe(200);
      expect(patched.body).toStrictEqual(user); // the email is not part of the User view
      // What KYC verified and others see (names, birth date, tax id) is the application's to change; nothing of
      // a refused request is applied or recorded (decisions 0054, 0059).
      const stored = async () => ({
        row: await userRow(user.uuid),
        audit: (await t.dataSource.query(
          'SELECT id, outcome FROM audit_records WHERE resource_id = $1 ORDER BY id',
          [user.uuid],
        )) as unknown[],
      });
      const before = await stored();
      for (const body of [
        { lastName: 'Own' },
        { firstName: 'Otra' },
        { birthday: '1990-01-02' },
        { taxId: '20-12345678-6' },
        { email: 'other@example.com', lastName: 'Own' },
      ]) {
        const refused = await patchUser(user.uuid, body, token);
        expect({ body, status: refused.status, reason: refused.body.detail?.reason }).toStrictEqual({
          body,
          status: 403,
          reason: 'INSUFFICIENT_PERMISSIONS',
        });
        expect(await stored()).toStrictEqual(before);
      }
      // The same values as now are no change, and pass.
      expect((await patchUser(user.uuid, { lastName: user.lastName }, token)).status).toBe(200);
      expect((await getUser(user.uuid)).body).toStrictEqual(user);
      expect((await deleteUser(user.uuid, token)).status).toBe(204);
      expectNotFound(await getUser(user.uuid), user.uuid);
    });

    it('another user of the same application is 404 (and unchanged)', async () => {
      const me = await created();
      const other = await created();
      const token = await subjectToken(appA, me.uuid);
      expectNotFound(await patchUser(other.uuid, { lastName: 'Hijacked' }, token), other.uuid);
      expectNotFound(await deleteUser(other.uuid, token), other.uuid);
      expect((await getUser(other.uuid)).body).toStrictEqual(other);
    });

    it('every route of another application is 404, even with sub naming the user', async () => {
      const inA = await created();
      const token = await subjectToken(appB, inA.uuid);
      expectNotFound(await patchUser(inA.uuid, { lastName: 'Hijacked' }, token), inA.uuid);
      expectNotFound(await deleteUser(inA.uuid, token), inA.uuid);
      expectNotFound(
        await api().get(`/v1/users/${inA.uuid}/kyc-data`).set('Authorization', bearer(token)),
        inA.uuid,
      );
      expectNotFound(
        await api()
          .post(`/v1/users/${inA.uuid}/kyc-data`)
          .set('Authorization', bearer(token))
          .send({ civilStatus: 'SINGLE', isPep: false, isSOAUIF: false }),
        inA.uuid,
      );
      expectNotFound(await getUser(inA.uuid, tokenB), inA.uuid);
      expectNotFound(await patchUser(inA.uuid, { lastName: 'Hijacked' }, tokenB), inA.uuid);
      expectNotFound(await deleteUser(inA.uuid, tokenB), inA.uuid);
      expect((await getUser(inA.uuid)).body).toStrictEqual(inA);
    });

    it('a uuid written in upper case names the same user, for the client and for the user itself', async () => {
      const user = await created();
      const upper = user.uuid.toUpperCase();
      expect((await getUser(upper)).body).toStrictEqual(user);
      const token = await subjectToken(appA, user.uuid);
      const patched = await patchUser(upper, { email: 'upper@example.com' }, token);
      expect(patched.status).toBe(200);
      expect(patched.body).toStrictEqual(user);
      const renamed = await patchUser(upper, { lastName: 'Upper' });
      expect(renamed.body).toStrictEqual({ ...user, lastName: 'Upper' });
      const kyc = await api()
        .post(`/v1/users/${upper}/kyc-data`)
        .set('Authorization', bearer(token))
        .send({ civilStatus: 'SINGLE', isPep: false, isSOAUIF: false });
      expect(kyc.status).toBe(201);
      expect(kyc.body.userId).toBe(user.uuid);
      const read = await api().get(`/v1/users/${upper}/kyc-data`).set('Authorization', bearer(token));
      expect(read.body).toStrictEqual(kyc.body);
      const history = await api()
        .get(`/v1/users/${upper}/kyc-data/history`)
        .set('Authorization', bearer(tokenA));
      expect((history.body as HistoryEntry[]).map((entry) => entry.ownerId)).toStrictEqual([user.uuid]);
    });

    it('is refused on the client-credentials routes', async () => {
      const user = await created();
      const token = await subjectToken(appA, user.uuid);
      expectUnauthorized(await listUsers({}, token));
      expectUnauthorized(await getUser(user.uuid, token));
      expectUnauthorized(
        await api().get(`/v1/users/${user.uuid}/kyc-data/history`).set('Authorization', bearer(token)),
      );
    });
  });

  describe('user KYC data', () => {
    const {
      path: kycPath,
      post: postKyc,
      get: getKyc,
      patch: patchKyc,
      history,
    } = kycDataRoutes(
      () => t.http,
      '/v1/users',
      () => tokenA,
    );
    const kycBody = { civilStatus: 'MARRIED', isPep: false, isSOAUIF: true };

    it('GET before creation answers 200 with uuid and every field null', async () => {
      const user = await created();
      const response = await getKyc(user.uuid);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        uuid: null,
        userId: user.uuid,
        civilStatus: null,
        isPep: null,
        isSOAUIF: null,
        isBlackListed: null,
      });
    });

    it('POST creates it (201 UserKYCData); GET answers the same; a second POST is a duplicate', async () => {
      const user = await created();
      const response = await postKyc(user.uuid, kycBody);
      expect(response.status).toBe(201);
      expect(response.body).toStrictEqual({
        uuid: expect.stringMatching(UUID),
        userId: user.uuid,
        civilStatus: 'MARRIED',
        isPep: false,
        isSOAUIF: true,
        isBlackListed: null,
      });
      expect((await getKyc(user.uuid)).body).toStrictEqual(response.body);

      const again = await postKyc(user.uuid, { civilStatus: 'SINGLE', isPep: true, isSOAUIF: false });
      expect(expectValidation(again)).toStrictEqual([
        { path: expect.any(String), message: expect.any(String), type: 'duplicate' },
      ]);
      expect((await getKyc(user.uuid)).body).toStrictEqual(response.body);
    });

    it('two concurrent POSTs: one 201, one duplicate, one history entry', async () => {
      const user = await created();
      const responses = await Promise.all([postKyc(user.uuid, kycBody), postKyc(user.uuid, kycBody)]);
      expect(responses.map((response) => response.status).sort()).toStrictEqual([201, 400]);
      const failed = responses.find((response) => response.status === 400) as request.Response;
      expect(expectValidation(failed).map((item) => item.type)).toStrictEqual(['duplicate']);
      expect((await history(user.uuid)).body).toHaveLength(1);
    });

    it.each(['SINGLE', 'MARRIED', 'DIVORCED', 'WIDOWED', 'CONCUBINE'])(
      'accepts civilStatus %s',
      async (civilStatus) => {
        const user = await created();
        const response = await postKyc(user.uuid, { ...kycBody, civilStatus });
        expect(response.status).toBe(201);
        expect(response.body.civilStatus).toBe(civilStatus);
      },
    );

    it('validates CreateUserKYCDataRequest', async () => {
      const user = await created();
      const cases: [Record<string, unknown>, Record<string, string>][] = [
        [{}, { civilStatus: 'required', isPep: 'required', isSOAUIF: 'required' }],
        [{ ...kycBody, civilStatus: 'single' }, { civilStatus: 'invalid' }],
        [{ ...kycBody, civilStatus: 'SEPARATED' }, { civilStatus: 'invalid' }],
        [{ ...kycBody, isPep: 'false' }, { isPep: 'invalid' }],
        [{ ...kycBody, isSOAUIF: 1 }, { isSOAUIF: 'invalid' }],
        [{ ...kycBody, isBlackListed: false }, { isBlackListed: 'invalid' }],
        [{ ...kycBody, uuid: randomUUID() }, { uuid: 'invalid' }],
      ];
      for (const [body, expected] of cases) {
        expect(byPath(expectValidation(await postKyc(user.uuid, body)))).toStrictEqual(expected);
      }
      expect((await getKyc(user.uuid)).body.uuid).toBeNull();
      const empty = await history(user.uuid);
      expect(empty.status).toBe(200);
      expect(empty.body).toStrictEqual([]);
    });

    it('PATCH changes the given fields; before creation it is 404', async () => {
      const user = await created();
      expectNotFound(await patchKyc(user.uuid, { isPep: true }), user.uuid);
      const first = (await postKyc(user.uuid, kycBody)).body as UserKycView;
      const response = await patchKyc(user.uuid, { isPep: true, civilStatus: 'WIDOWED' });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ ...first, isPep: true, civilStatus: 'WIDOWED' });
      expect((await getKyc(user.uuid)).body).toStrictEqual(response.body);
      expect(byPath(expectValidation(await patchKyc(user.uuid, { civilStatus: 'widowed' })))).toStrictEqual({
        civilStatus: 'invalid',
      });
    });

    it('isBlackListed: 403 INSUFFICIENT_PERMISSIONS with a user token, allowed with client credentials', async () => {
      const user = await created();
      const own = await subjectToken(appA, user.uuid);
      const first = (await postKyc(user.uuid, kycBody, own)).body as UserKycView;
      const refusedChange = await patchKyc(user.uuid, { isBlackListed: false, isPep: true }, own);
      expect(refusedChange.status).toBe(403);
      expect(refusedChange.body).toStrictEqual({
        name: 'ForbiddenError',
        message: expect.any(String),
        detail: { reason: 'INSUFFICIENT_PERMISSIONS' },
      });
      expect((await getKyc(user.uuid, own)).body).toStrictEqual(first);

      const allowed = await patchKyc(user.uuid, { isBlackListed: true });
      expect(allowed.status).toBe(200);
      expect(allowed.body).toStrictEqual({ ...first, isBlackListed: true });
      // The user reads it, and may still change its other fields.
      expect((await getKyc(user.uuid, own)).body.isBlackListed).toBe(true);
      const ownChange = await patchKyc(user.uuid, { isSOAUIF: false }, own);
      expect(ownChange.body).toStrictEqual({ ...first, isBlackListed: true, isSOAUIF: false });
    });

    it("a user token reaches its own KYC data only; unknown, deleted and another application's users are 404", async () => {
      const me = await created();
      const other = await created();
      const token = await subjectToken(appA, me.uuid);
      expect((await postKyc(me.uuid, kycBody, token)).status).toBe(201);
      expectNotFound(await postKyc(other.uuid, kycBody, token), other.uuid);
      expectNotFound(await getKyc(other.uuid, token), other.uuid);
      expectNotFound(await patchKyc(other.uuid, { isPep: true }, token), other.uuid);

      const unknown = randomUUID();
      expectNotFound(await getKyc(unknown), unknown);
      expectNotFound(await postKyc(unknown, kycBody), unknown);
      expectNotFound(await history(unknown), unknown);

      const inB = await created(userBody(), tokenB);
      expectNotFound(await postKyc(inB.uuid, kycBody), inB.uuid);
      expectNotFound(await history(inB.uuid), inB.uuid);

      expect((await deleteUser(me.uuid)).status).toBe(204);
      expectNotFound(await getKyc(me.uuid), me.uuid);
      expectNotFound(await patchKyc(me.uuid, { isPep: true }), me.uuid);
      expectNotFound(await history(me.uuid), me.uuid);
    });

    it('history lists every change in order: section, previous, current, actor, at; refused changes leave none', async () => {
      const user = await created();
      const own = await subjectToken(appA, user.uuid);
      const start = Date.now();
      const v1 = (await postKyc(user.uuid, kycBody)).body as UserKycView;
      const v2 = (await patchKyc(user.uuid, { isPep: true }, own)).body as UserKycView;
      expect((await patchKyc(user.uuid, { isBlackListed: true }, own)).status).toBe(403);
      expect((await postKyc(user.uuid, kycBody, own)).status).toBe(400);
      const v3 = (await patchKyc(user.uuid, { isBlackListed: true })).body as UserKycView;

      const response = await history(user.uuid);
      expect(response.status).toBe(200);
      expect(response.headers['x-next-cursor']).toBeUndefined();
      const entries = response.body as HistoryEntry[];
      const common = {
        id: expect.any(String),
        ownerType: 'USER',
        ownerId: user.uuid,
        section: 'kycData',
        at: expect.any(String),
      };
      expect(entries).toStrictEqual([
        { ...common, previous: null, current: v1, actor: `client:${appA.appId}` },
        { ...common, previous: v1, current: v2, actor: `subject:${user.uuid}` },
        { ...common, previous: v2, current: v3, actor: `client:${appA.appId}` },
      ]);
      const times = entries.map((entry) => Date.parse(entry.at));
      for (const time of times) {
        expect(time).toBeGreaterThanOrEqual(start - 5_000);
        expect(time).toBeLessThanOrEqual(Date.now() + 5_000);
      }
      expect([...times].sort((a, b) => a - b)).toStrictEqual(times);
      expect(new Date(entries[0].at).toISOString()).toBe(entries[0].at);

      // Paginated like the lists.
      const { pages } = await allPages<HistoryEntry>(t.http, `${kycPath(user.uuid)}/history`, tokenA, 2);
      expect(pages.map((page) => page.length)).toStrictEqual([2, 1]);
      expect(pages.flat()).toStrictEqual(entries);
      expect(byPath(expectValidation(await history(user.uuid, { cursor: 'garbage' })))).toStrictEqual({
        cursor: 'invalid',
      });
      expect(byPath(expectValidation(await history(user.uuid, { limit: 0 })))).toStrictEqual({
        limit: 'invalid',
      });
    });

    it('history is for client credentials only', async () => {
      const user = await created();
      expectUnauthorized(await history(user.uuid, {}, await subjectToken(appA, user.uuid)));
    });
  });
});

/** Identity through the real wallet (WalletReadModule provides OWNER_ACCOUNTS): accounts opened and funded over HTTP. */
describe('identity: owners with a wallet account (the real wallet)', () => {
  let t: TestApp;
  let app: TestClient;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp();
    app = await registerClient(t.app, 'owners-with-accounts');
    token = await accessToken(t.http, app);
  });
  afterAll(() => t.close());

  const openAccount = (ownerType: 'USER' | 'COMPANY', uuid: string) =>
    openWalletAccount(t.http, token, app.appId, uuid, ownerType);
  const setBalance = (accountId: string, balance: number) =>
    setWalletBalance(t.http, token, accountId, balance);

  it("the User carries its account (GET, list, PATCH); a new user's is null", async () => {
    const response = await request(t.http)
      .post('/v1/users')
      .set('Authorization', bearer(token))
      .send(userBody());
    expect(response.status).toBe(201);
    const user = response.body as UserView;
    expect(user.account).toBeNull();
    const opened = await openAccount('USER', user.uuid);
    await setBalance(opened.uuid, 1500.5);
    const account = { ...opened, balance: 1500.5 };
    expect(account).toStrictEqual({
      ownerType: 'USER',
      uuid: expect.stringMatching(UUID),
      status: 'ACTIVE',
      created: expect.any(String),
      updated: expect.any(String),
      cvu: expect.stringMatching(/^000\d{19}$/),
      alias: expect.stringMatching(/^[A-Za-z0-9.-]{6,20}$/),
      currency: 'ARS',
      balance: 1500.5,
      monthlyDepositOperation: 0,
      monthlyWithdrawOperation: 0,
    });

    const read = await request(t.http).get(`/v1/users/${user.uuid}`).set('Authorization', bearer(token));
    expect(read.body).toStrictEqual({ ...user, account });
    const listed = await request(t.http).get('/v1/users/all').set('Authorization', bearer(token));
    expect(listed.body).toStrictEqual([{ ...user, account }]);
    const patched = await request(t.http)
      .patch(`/v1/users/${user.uuid}`)
      .set('Authorization', bearer(token))
      .send({ firstName: 'Con cuenta' });
    expect(patched.body).toStrictEqual({ ...user, firstName: 'Con cuenta', account });

    // A deleted account is no longer shown.
    await setBalance(opened.uuid, 0);
    const deleted = await request(t.http)
      .delete(`/v1/wallet/accounts/${opened.uuid}`)
      .set('Authorization', bearer(token));
    expect(deleted.status).toBe(200);
    const after = await request(t.http).get(`/v1/users/${user.uuid}`).set('Authorization', bearer(token));
    expect(after.body.account).toBeNull();
  });

  it('a user or company whose account holds money cannot be deleted: 403 INVALID_STATE, nothing changes', async () => {
    const user = (
      await request(t.http).post('/v1/users').set('Authorization', bearer(token)).send(userBody())
    ).body as UserView;
    const company = (
      await request(t.http).post('/v1/companies').set('Authorization', bearer(token)).send(companyBody())
    ).body as { uuid: string };
    const accounts = [await openAccount('USER', user.uuid), await openAccount('COMPANY', company.uuid)];
    for (const account of accounts) await setBalance(account.uuid, 0.01);

    for (const path of [`/v1/users/${user.uuid}`, `/v1/companies/${company.uuid}`]) {
      const refusedDelete = await request(t.http).delete(path).set('Authorization', bearer(token));
      expect(refusedDelete.status).toBe(403);
      expect(refusedDelete.body).toStrictEqual({
        name: 'ForbiddenError',
        message: expect.any(String),
        detail: { reason: 'INVALID_STATE' },
      });
    }
    const rows = (await t.dataSource.query(
      `SELECT id FROM users WHERE id = $1 AND deleted_at IS NULL UNION ALL
       SELECT id FROM companies WHERE id = $2 AND deleted_at IS NULL`,
      [user.uuid, company.uuid],
    )) as { id: string }[];
    expect(rows).toHaveLength(2);

    for (const account of accounts) await setBalance(account.uuid, 0);
    for (const path of [`/v1/users/${user.uuid}`, `/v1/companies/${company.uuid}`]) {
      expect((await request(t.http).delete(path).set('Authorization', bearer(token))).status).toBe(204);
    }
  });
});
