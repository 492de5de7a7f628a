import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import {
  allPages,
  cnpjDigits,
  companyBody,
  dashed,
  expectNotFound,
  expectUnauthorized,
  expectValidation,
  legalAddress,
  newCnpj,
  newCuit,
  withWrongCheckDigit,
  byPath,
  expectRefusedWithoutWrites,
  kycDataRoutes,
  ownerRoutes,
  UUID,
  type CreateCompanyBody,
  type HistoryEntry,
  type ValidationItem,
} from './support/identity.js';
import type { TestApp } from './support/test-app.js';
import { startWithTwoApplications } from './support/two-applications.js';
import { expectForbidden } from './support/wallet.js';

interface CompanyView {
  uuid: string;
  name: string;
  legalName: string;
  taxInfomation: { type: string; value: string; condition: string };
  legalAddress: Record<string, string>;
}

interface CompanyKycView {
  companyId: string;
  datosBasicos: Record<string, unknown> | null;
  estructuraCorporativa: Record<string, unknown> | null;
  gestionDeRiesgo: Record<string, unknown> | null;
  monitoreoDeCumplimiento: Record<string, unknown> | null;
  updated: string | null;
}

const SECTIONS = [
  'datosBasicos',
  'estructuraCorporativa',
  'gestionDeRiesgo',
  'monitoreoDeCumplimiento',
] as const;

function without(body: CreateCompanyBody, path: string): Record<string, unknown> {
  const copy = structuredClone(body) as unknown as Record<string, Record<string, unknown>>;
  const [head, tail] = path.split('.');
  if (tail) delete copy[head][tail];
  else delete copy[head];
  return copy;
}

describe('identity: companies (real database)', () => {
  let t: TestApp;
  let appA: TestClient;
  let appB: TestClient;
  let tokenA: string;
  let tokenB: string;

  beforeAll(async () => {
    ({ t, appA, appB, tokenA, tokenB } = await startWithTwoApplications('companies'));
  });
  afterAll(() => t.close());

  const api = () => request(t.http);
  const {
    create: createCompany,
    get: getCompany,
    patch: patchCompany,
    remove: deleteCompany,
    list: listCompanies,
  } = ownerRoutes(
    () => t.http,
    '/v1/companies',
    () => tokenA,
  );
  const {
    path: kycPath,
    post: postKyc,
    get: getKyc,
    history,
  } = kycDataRoutes(
    () => t.http,
    '/v1/companies',
    () => tokenA,
  );

  const created = async (body: object = companyBody(), token = tokenA): Promise<CompanyView> => {
    const response = await createCompany(body, token);
    expect(response.status).toBe(201);
    return response.body as CompanyView;
  };

  /** Runs a request that must be refused and asserts that nothing was written to the identity tables. */
  const refused = (send: () => Promise<request.Response>): Promise<request.Response> =>
    expectRefusedWithoutWrites(t.dataSource, ['companies', 'company_kyc_data', 'kyc_history'], send);
  const refusedCreate = async (body: unknown, token = tokenA): Promise<ValidationItem[]> =>
    expectValidation(await refused(() => createCompany(body, token)));

  const companyRow = async (uuid: string) => {
    const rows = (await t.dataSource.query(
      `SELECT name, trade_name, company_type, tax_type, tax_value, tax_condition, operation_country, deleted_at
       FROM companies WHERE id = $1`,
      [uuid],
    )) as {
      name: string;
      trade_name: string;
      company_type: string;
      tax_type: string;
      tax_value: string;
      tax_condition: string;
      operation_country: string;
      deleted_at: Date | null;
    }[];
    return rows[0];
  };

  describe('POST /v1/companies', () => {
    it('creates a company and answers the Company, exactly (taxInfomation, spelled so)', async () => {
      const body = companyBody();
      const response = await createCompany(body);
      expect(response.status).toBe(201);
      expect(response.body).toStrictEqual({
        uuid: expect.stringMatching(UUID),
        name: 'Yerba Sur',
        legalName: 'Yerba Sur S.R.L.',
        taxInfomation: { type: 'CUIT', value: body.taxValue, condition: 'VAT_REGISTERED' },
        legalAddress: legalAddress(),
      });
      expect(response.body).not.toHaveProperty('taxInformation');
      expect(await companyRow(response.body.uuid)).toMatchObject({
        trade_name: 'Yerba Sur',
        company_type: 'SRL',
        operation_country: 'AR',
        deleted_at: null,
      });
    });

    it.each(['30', '33', '34'])(
      'accepts a valid company CUIT with prefix %s, dashed or not',
      async (prefix) => {
        const cuit = newCuit(prefix);
        expect((await created(companyBody(cuit))).taxInfomation.value).toBe(cuit);
        const other = newCuit(prefix);
        expect((await created(companyBody(dashed(other)))).taxInfomation.value).toBe(other);
      },
    );

    it('accepts a CNPJ with valid check digits (11.222.333/0001-81), answered as digits', async () => {
      const company = await created({ ...companyBody(), taxType: 'CNPJ', taxValue: '11.222.333/0001-81' });
      expect(company.taxInfomation).toStrictEqual({
        type: 'CNPJ',
        value: '11222333000181',
        condition: 'VAT_REGISTERED',
      });
      const fresh = newCnpj();
      expect(
        (await created({ ...companyBody(), taxType: 'CNPJ', taxValue: fresh })).taxInfomation.value,
      ).toBe(fresh);
    });

    it("accepts the alphanumeric CNPJ Brazil issues from July 2026 (Receita Federal's 12.ABC.345/01DE-35), stored in upper case", async () => {
      const company = await created({ ...companyBody(), taxType: 'CNPJ', taxValue: '12.abc.345/01de-35' });
      expect(company.taxInfomation).toStrictEqual({
        type: 'CNPJ',
        value: '12ABC34501DE35',
        condition: 'VAT_REGISTERED',
      });
      expect((await getCompany(company.uuid)).body.taxInfomation.value).toBe('12ABC34501DE35');
      // The same CNPJ in the other case is the same company.
      expect(
        byPath(await refusedCreate({ ...companyBody(), taxType: 'CNPJ', taxValue: '12ABC34501DE35' })),
      ).toStrictEqual({ taxValue: 'duplicate' });
    });

    it.each([
      ['CUIT', 'CUIT'],
      ['cuit', 'CUIT'],
      ['CNPJ', 'CNPJ'],
      ['cnpj', 'CNPJ'],
    ])('taxType %s → %s', async (input, output) => {
      const taxValue = output === 'CUIT' ? newCuit('30') : newCnpj();
      expect((await created({ ...companyBody(), taxType: input, taxValue })).taxInfomation.type).toBe(output);
    });

    it.each([
      ['VAT_REGISTERED', 'VAT_REGISTERED'],
      ['OTHERS', 'OTHERS'],
      ['vatRegistered', 'VAT_REGISTERED'],
      ['others', 'OTHERS'],
    ])('taxCondition %s → %s', async (input, output) => {
      const company = await created({ ...companyBody(), taxCondition: input });
      expect(company.taxInfomation.condition).toBe(output);
      expect((await getCompany(company.uuid)).body.taxInfomation.condition).toBe(output);
    });

    it.each([
      ['a wrong check digit', () => withWrongCheckDigit(newCuit('30'))],
      ['a person prefix 20', () => newCuit('20')],
      ['a person prefix 27', () => newCuit('27')],
      ['10 digits', () => newCuit('30').slice(0, 10)],
      ['letters', () => '30-ABCDEFGH-1'],
    ])('refuses a CUIT with %s at taxValue (invalid)', async (_label, taxValue) => {
      expect(await refusedCreate(companyBody(taxValue()))).toStrictEqual([
        { path: 'taxValue', message: expect.any(String), type: 'invalid' },
      ]);
    });

    it.each([
      ['a wrong first check digit', '11222333000191'],
      ['a wrong second check digit', '11.222.333/0001-82'],
      ['13 digits', '1122233300018'],
      ['all the same digit', '00000000000000'],
      ['a CUIT', newCuit('30')],
      ['an alphanumeric one with a wrong check digit', '12ABC34501DE36'],
      ['letters where the check digits go', '12ABC34501DEAB'],
    ])('refuses a CNPJ with %s at taxValue (invalid)', async (_label, taxValue) => {
      expect(await refusedCreate({ ...companyBody(), taxType: 'CNPJ', taxValue })).toStrictEqual([
        { path: 'taxValue', message: expect.any(String), type: 'invalid' },
      ]);
    });

    it('refuses the same tax id twice in one application (duplicate), accepts it in another', async () => {
      const cuit = newCuit('30');
      await created(companyBody(cuit));
      expect(await refusedCreate(companyBody(cuit))).toStrictEqual([
        { path: 'taxValue', message: expect.any(String), type: 'duplicate' },
      ]);
      expect(byPath(await refusedCreate(companyBody(dashed(cuit))))).toStrictEqual({ taxValue: 'duplicate' });
      expect((await created(companyBody(cuit), tokenB)).taxInfomation.value).toBe(cuit);

      const cnpj = newCnpj();
      await created({ ...companyBody(), taxType: 'CNPJ', taxValue: cnpj });
      expect(
        byPath(await refusedCreate({ ...companyBody(), taxType: 'cnpj', taxValue: cnpj })),
      ).toStrictEqual({
        taxValue: 'duplicate',
      });
    });

    it('accepts the tax id again once its company is deleted', async () => {
      const cuit = newCuit('33');
      const first = await created(companyBody(cuit));
      expect((await deleteCompany(first.uuid)).status).toBe(204);
      const second = await created(companyBody(cuit));
      expect(second.uuid).not.toBe(first.uuid);
      expect((await companyRow(first.uuid)).tax_value).toBe(cuit);
    });

    describe('validation (nothing is written)', () => {
      const fields = [
        'name',
        'legalName',
        'tradeName',
        'companyType',
        'taxType',
        'taxValue',
        'taxCondition',
        'operationCountry',
        'legalAddress',
      ];

      it('names every missing required field with type required', async () => {
        expect(byPath(await refusedCreate({}))).toStrictEqual(
          Object.fromEntries(fields.map((field) => [field, 'required'])),
        );
      });

      it.each([
        ...fields,
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
        expect(await refusedCreate(without(companyBody(), path))).toStrictEqual([
          { path, message: expect.any(String), type: 'required' },
        ]);
      });

      it.each([
        ['taxType', 'RUT'],
        ['taxType', 'DNI'],
        ['taxCondition', 'EXEMPT'],
        ['taxCondition', 'vat_registered'],
        ['name', ''],
        ['name', '   '], // blank: stored trimmed, it was "" (decision 0091)
        ['tradeName', ' \t '],
        ['companyType', '  '],
        ['name', 42],
        ['legalName', 'x'.repeat(201)],
        ['operationCountry', 'XX'],
        ['operationCountry', 'ar'],
        ['operationCountry', 'ARG'],
        ['legalAddress', 'Avenida Corrientes 1234'],
      ])('refuses %s %p (invalid)', async (path, value) => {
        expect(await refusedCreate({ ...companyBody(), [path]: value })).toStrictEqual([
          { path, message: expect.any(String), type: 'invalid' },
        ]);
      });

      it.each(['XX', 'ar', 'ARG'])('refuses legalAddress.country %p', async (country) => {
        expect(
          await refusedCreate({ ...companyBody(), legalAddress: { ...legalAddress(), country } }),
        ).toStrictEqual([{ path: 'legalAddress.country', message: expect.any(String), type: 'invalid' }]);
      });

      it.each([
        ['uuid', randomUUID()],
        ['appId', randomUUID()],
        ['taxInfomation', { type: 'CUIT', value: '30000000000', condition: 'OTHERS' }],
        ['datosBasicos', {}],
        ['website', 'https://example.com'],
      ])('refuses the unknown property %s', async (path, value) => {
        expect(await refusedCreate({ ...companyBody(), [path]: value })).toStrictEqual([
          { path, message: expect.any(String), type: 'invalid' },
        ]);
      });

      it('refuses an unknown property inside legalAddress', async () => {
        expect(
          await refusedCreate({ ...companyBody(), legalAddress: { ...legalAddress(), department: 'x' } }),
        ).toStrictEqual([{ path: 'legalAddress.department', message: expect.any(String), type: 'invalid' }]);
      });

      it('refuses without credentials', async () => {
        expectUnauthorized(await refused(() => api().post('/v1/companies').send(companyBody())));
      });
    });
  });

  describe('GET /v1/companies/all', () => {
    it('answers a plain array, oldest first; 200 [] for an application without companies', async () => {
      const app = await registerClient(t.app, 'companies-list');
      const token = await accessToken(t.http, app);
      const empty = await listCompanies({}, token);
      expect(empty.status).toBe(200);
      expect(empty.body).toStrictEqual([]);
      const first = await created(companyBody(), token);
      const second = await created({ ...companyBody(), name: 'Mate Norte' }, token);
      const response = await listCompanies({}, token);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual([first, second]);
      expect(response.headers['x-next-cursor']).toBeUndefined();
    });

    it('7 companies with limit 3: pages of 3, 3 and 1; deleted ones are skipped', async () => {
      const app = await registerClient(t.app, 'companies-pages');
      const token = await accessToken(t.http, app);
      const ids: string[] = [];
      for (let i = 0; i < 7; i++)
        ids.push((await created({ ...companyBody(), name: `Company ${i}` }, token)).uuid);
      const { pages, cursors } = await allPages<CompanyView>(t.http, '/v1/companies/all', token, 3);
      expect(pages.map((page) => page.length)).toStrictEqual([3, 3, 1]);
      expect(cursors).toHaveLength(2);
      const seen = pages.flat().map((company) => company.uuid);
      expect(new Set(seen).size).toBe(7);
      expect(seen).toStrictEqual(ids);

      expect((await deleteCompany(ids[0], token)).status).toBe(204);
      const after = await allPages<CompanyView>(t.http, '/v1/companies/all', token, 3);
      expect(after.pages.map((page) => page.length)).toStrictEqual([3, 3]);
      expect(after.pages.flat().map((company) => company.uuid)).toStrictEqual(ids.slice(1));
    });

    it('companies created in the same instant are all served once', async () => {
      const app = await registerClient(t.app, 'companies-ties');
      const token = await accessToken(t.http, app);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await created(companyBody(), token)).uuid);
      await t.dataSource.query(`UPDATE companies SET created_at = '2024-06-01T12:00:00Z' WHERE app_id = $1`, [
        app.appId,
      ]);
      const { pages } = await allPages<CompanyView>(t.http, '/v1/companies/all', token, 2);
      expect(pages.map((page) => page.length)).toStrictEqual([2, 2, 1]);
      expect(pages.flat().map((company) => company.uuid)).toStrictEqual([...ids].sort());
    });

    it("never lists another application's companies", async () => {
      const inB = await created(companyBody(), tokenB);
      const listed = ((await listCompanies({ limit: 500 })).body as CompanyView[]).map(
        (company) => company.uuid,
      );
      expect(listed.length).toBeGreaterThan(0);
      expect(listed).not.toContain(inB.uuid);
    });

    it('refuses bad limits, a garbage cursor and unknown query parameters', async () => {
      for (const limit of ['0', '501', 'abc']) {
        expect(byPath(expectValidation(await listCompanies({ limit })))).toStrictEqual({ limit: 'invalid' });
      }
      expect(byPath(expectValidation(await listCompanies({ cursor: 'garbage' })))).toStrictEqual({
        cursor: 'invalid',
      });
      expect(byPath(expectValidation(await listCompanies({ sort: 'name' })))).toStrictEqual({
        sort: 'invalid',
      });
    });

    it('is refused to a user token (even the company itself) and without credentials', async () => {
      const company = await created();
      expectUnauthorized(await listCompanies({}, await subjectToken(appA, company.uuid)));
      expectUnauthorized(await api().get('/v1/companies/all'));
    });
  });

  describe('GET /v1/companies/{uuid}', () => {
    it('answers the Company to the client and to a user token whose sub is the company', async () => {
      const company = await created();
      const byClient = await getCompany(company.uuid);
      expect(byClient.status).toBe(200);
      expect(byClient.body).toStrictEqual(company);
      const bySelf = await getCompany(company.uuid, await subjectToken(appA, company.uuid));
      expect(bySelf.status).toBe(200);
      expect(bySelf.body).toStrictEqual(company);
      expect(
        (await getCompany(company.uuid.toUpperCase(), await subjectToken(appA, company.uuid))).status,
      ).toBe(200);
    });

    it('answers 404 to another subject, for an unknown uuid and for another application; 400 for a malformed uuid', async () => {
      const company = await created();
      expectNotFound(await getCompany(company.uuid, await subjectToken(appA, randomUUID())), company.uuid);
      const unknown = randomUUID();
      expectNotFound(await getCompany(unknown), unknown);
      expectNotFound(await getCompany(company.uuid, tokenB), company.uuid);
      expectNotFound(await getCompany(company.uuid, await subjectToken(appB, company.uuid)), company.uuid);
      expectValidation(await getCompany('not-a-uuid'));
      expectUnauthorized(await api().get(`/v1/companies/${company.uuid}`));
    });
  });

  describe('bearer principal (user token: sub = the company)', () => {
    it('POST with a user token registers the company named by sub, once', async () => {
      const sub = randomUUID();
      const token = await subjectToken(appA, sub);
      const company = await created(companyBody(), token);
      expect(company.uuid).toBe(sub);
      expect((await getCompany(sub, token)).body).toStrictEqual(company);
      expect(await refusedCreate(companyBody(), token)).toStrictEqual([
        { path: expect.any(String), message: expect.any(String), type: 'duplicate' },
      ]);
    });

    it('patches KYC data and deletes its own company; another company is 404', async () => {
      const company = await created();
      const other = await created();
      const token = await subjectToken(appA, company.uuid);
      expect(
        (await patchCompany(company.uuid, { dataSection: 'gestionDeRiesgo', data: { a: 1 } }, token)).status,
      ).toBe(200);
      expectNotFound(
        await refused(() =>
          patchCompany(other.uuid, { dataSection: 'gestionDeRiesgo', data: { a: 1 } }, token),
        ),
        other.uuid,
      );
      expectNotFound(await refused(() => postKyc(other.uuid, { data: { a: 1 } }, token)), other.uuid);
      expectNotFound(await getKyc(other.uuid, token), other.uuid);
      expectNotFound(await deleteCompany(other.uuid, token), other.uuid);
      expect((await getCompany(other.uuid)).status).toBe(200);
      expect((await deleteCompany(company.uuid, token)).status).toBe(204);
      expectNotFound(await getCompany(company.uuid), company.uuid);
    });
  });

  describe('PATCH /v1/companies/{uuid} (UpdateKYCDataRequest)', () => {
    it.each(SECTIONS)('replaces the %s section and answers the four sections', async (section) => {
      const company = await created();
      const data = { nested: { list: [1, 'two', { three: true }], empty: {} }, text: 'ñandú', nothing: null };
      const response = await patchCompany(company.uuid, { dataSection: section, data });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        companyId: company.uuid,
        datosBasicos: null,
        estructuraCorporativa: null,
        gestionDeRiesgo: null,
        monitoreoDeCumplimiento: null,
        [section]: data,
        updated: expect.any(String),
      });
      expect(new Date(response.body.updated).toISOString()).toBe(response.body.updated);
      expect((await getKyc(company.uuid)).body).toStrictEqual(response.body);
    });

    it('sections accumulate; a section given again is replaced, not merged', async () => {
      const company = await created();
      await patchCompany(company.uuid, { dataSection: 'datosBasicos', data: { a: 1, b: 2 } });
      await patchCompany(company.uuid, { dataSection: 'estructuraCorporativa', data: { socios: ['x'] } });
      const response = await patchCompany(company.uuid, { dataSection: 'datosBasicos', data: { c: 3 } });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        datosBasicos: { c: 3 },
        estructuraCorporativa: { socios: ['x'] },
        gestionDeRiesgo: null,
        monitoreoDeCumplimiento: null,
      });
      const empty = await patchCompany(company.uuid, { dataSection: 'datosBasicos', data: {} });
      const view = empty.body as CompanyKycView;
      expect(view.datosBasicos).toStrictEqual({});
      expect(view.estructuraCorporativa).toStrictEqual({ socios: ['x'] });
      expect(Date.parse(view.updated as string)).toBeGreaterThanOrEqual(Date.parse(response.body.updated));
    });

    it('refuses an invalid dataSection, data that is not an object, and unknown properties', async () => {
      const company = await created();
      const cases: [unknown, Record<string, string>][] = [
        [{ dataSection: 'datosbasicos', data: {} }, { dataSection: 'invalid' }],
        [{ dataSection: 'taxInformation', data: {} }, { dataSection: 'invalid' }],
        [{ dataSection: 42, data: {} }, { dataSection: 'invalid' }],
        [{ data: {} }, { dataSection: 'required' }],
        [{ dataSection: 'datosBasicos' }, { data: 'required' }],
        [{ dataSection: 'datosBasicos', data: null }, { data: 'required' }],
        [{ dataSection: 'datosBasicos', data: 'text' }, { data: 'invalid' }],
        [{ dataSection: 'datosBasicos', data: [1, 2] }, { data: 'invalid' }],
        [{ dataSection: 'datosBasicos', data: 7 }, { data: 'invalid' }],
        [{ dataSection: 'datosBasicos', data: {}, name: 'x' }, { name: 'invalid' }],
      ];
      for (const [body, expected] of cases) {
        expect(byPath(expectValidation(await refused(() => patchCompany(company.uuid, body))))).toStrictEqual(
          expected,
        );
      }
      expect((await getKyc(company.uuid)).body.updated).toBeNull();
    });

    it("answers 404 for unknown, deleted and another application's companies", async () => {
      const unknown = randomUUID();
      const body = { dataSection: 'datosBasicos', data: { a: 1 } };
      expectNotFound(await refused(() => patchCompany(unknown, body)), unknown);
      const inB = await created(companyBody(), tokenB);
      expectNotFound(await refused(() => patchCompany(inB.uuid, body)), inB.uuid);
      const gone = await created();
      expect((await deleteCompany(gone.uuid)).status).toBe(204);
      expectNotFound(await refused(() => patchCompany(gone.uuid, body)), gone.uuid);
      expectValidation(await patchCompany('not-a-uuid', body));
    });
  });

  describe("sections that identify the company, with the company's own token (decision 0059)", () => {
    /** What a refused request must leave as it was: the company, its sections, their history, its audit records. */
    const storedOf = async (companyId: string) => ({
      company: (await t.dataSource.query('SELECT to_jsonb(c) AS row FROM companies c WHERE id = $1', [
        companyId,
      ])) as unknown[],
      sections: (await t.dataSource.query(
        'SELECT to_jsonb(k) AS row FROM company_kyc_data k WHERE company_id = $1',
        [companyId],
      )) as unknown[],
      history: (await t.dataSource.query(
        'SELECT id, section, previous, current, actor FROM kyc_history WHERE owner_id = $1 ORDER BY id',
        [companyId],
      )) as unknown[],
      audit: (await t.dataSource.query(
        'SELECT id, principal_type, action, outcome FROM audit_records WHERE resource_id = $1 ORDER BY id',
        [companyId],
      )) as { principal_type: string; action: string; outcome: string }[],
    });

    it.each(['datosBasicos', 'estructuraCorporativa'])(
      '%s, once given, is refused to the company (403, nothing written) and changed by the application',
      async (section) => {
        const company = await created();
        const own = await subjectToken(appA, company.uuid);
        const given = {
          razonSocial: 'Yerba Sur S.R.L.',
          cuit: company.taxInfomation.value,
          fechaConstitucion: '2010-05-01',
          socios: [{ nombre: 'Ana Pérez', cuit: '20123456786', fechaNacimiento: '1980-02-03' }],
        };
        expect((await patchCompany(company.uuid, { dataSection: section, data: given })).status).toBe(200);
        expect((await getKyc(company.uuid)).body).toMatchObject({ [section]: given });
        const before = await storedOf(company.uuid);
        for (const data of [
          { ...given, razonSocial: 'Otra S.A.' },
          { ...given, cuit: '30712345671' },
          { ...given, fechaConstitucion: '1999-01-01' },
          { ...given, socios: [{ nombre: 'Otro', cuit: '20987654321', fechaNacimiento: '1970-01-01' }] },
          {},
        ]) {
          const refusal = await patchCompany(company.uuid, { dataSection: section, data }, own);
          expect({ data, status: refusal.status }).toStrictEqual({ data, status: 403 });
          expectForbidden(refusal, 'INSUFFICIENT_PERMISSIONS');
          expect(await storedOf(company.uuid)).toStrictEqual(before);
        }

        // The application changes it.
        const renamed = { ...given, razonSocial: 'Yerba Sur S.A.' };
        const changed = await patchCompany(company.uuid, { dataSection: section, data: renamed });
        expect(changed.status).toBe(200);
        expect(changed.body).toMatchObject({ [section]: renamed });
        const after = await storedOf(company.uuid);
        expect(after.history.slice(0, before.history.length)).toStrictEqual(before.history);
        expect(after.history.slice(before.history.length)).toStrictEqual([
          {
            id: expect.any(String),
            section,
            previous: given,
            current: renamed,
            actor: `client:${appA.appId}`,
          },
        ]);
        expect(after.audit.map((record) => record.outcome).slice(before.audit.length)).toStrictEqual([
          'updated',
        ]);
      },
    );

    it('the data a section has is no change, for the company and the application alike: 200, no history, recorded unchanged', async () => {
      const company = await created();
      const own = await subjectToken(appA, company.uuid);
      const data = { razonSocial: 'Yerba Sur S.R.L.', domicilio: { calle: 'Corrientes', numero: 1234 } };
      const given = await patchCompany(company.uuid, { dataSection: 'datosBasicos', data });
      expect(given.status).toBe(200);
      const before = await storedOf(company.uuid);
      // The same data with its keys in another order.
      const same = { domicilio: { numero: 1234, calle: 'Corrientes' }, razonSocial: 'Yerba Sur S.R.L.' };
      for (const token of [own, tokenA]) {
        const response = await patchCompany(company.uuid, { dataSection: 'datosBasicos', data: same }, token);
        expect(response.status).toBe(200);
        expect(response.body).toStrictEqual(given.body);
      }
      const after = await storedOf(company.uuid);
      expect({ ...after, audit: undefined }).toStrictEqual({ ...before, audit: undefined });
      expect(after.audit.slice(0, before.audit.length)).toStrictEqual(before.audit);
      expect(
        after.audit.slice(before.audit.length).map(({ principal_type, action, outcome }) => ({
          principal_type,
          action,
          outcome,
        })),
      ).toStrictEqual(
        ['subject', 'client'].map((principal_type) => ({
          principal_type,
          action: 'PATCH /v1/companies/{uuid}',
          outcome: 'unchanged',
        })),
      );
    });

    it.each(['never given', 'given as {} (decision 0097)'])(
      'the company gives a section that holds nothing yet (%s), and keeps gestionDeRiesgo and monitoreoDeCumplimiento its own',
      async (before) => {
        const company = await created();
        const own = await subjectToken(appA, company.uuid);
        if (before !== 'never given') {
          for (const section of ['datosBasicos', 'estructuraCorporativa']) {
            expect((await patchCompany(company.uuid, { dataSection: section, data: {} }, own)).status).toBe(
              200,
            );
          }
        }
        expect((await postKyc(company.uuid, { data: { razonSocial: 'Yerba Sur S.R.L.' } }, own)).status).toBe(
          201,
        );
        expect(
          (
            await patchCompany(
              company.uuid,
              { dataSection: 'estructuraCorporativa', data: { socios: [] } },
              own,
            )
          ).status,
        ).toBe(200);
        expectForbidden(
          await patchCompany(
            company.uuid,
            { dataSection: 'datosBasicos', data: { razonSocial: 'Otra' } },
            own,
          ),
          'INSUFFICIENT_PERMISSIONS',
        );
        for (const section of ['gestionDeRiesgo', 'monitoreoDeCumplimiento']) {
          for (const data of [{ nivel: 'bajo' }, { nivel: 'alto' }]) {
            expect((await patchCompany(company.uuid, { dataSection: section, data }, own)).status).toBe(200);
          }
        }
        expect((await getKyc(company.uuid)).body).toMatchObject({
          datosBasicos: { razonSocial: 'Yerba Sur S.R.L.' },
          estructuraCorporativa: { socios: [] },
          gestionDeRiesgo: { nivel: 'alto' },
          monitoreoDeCumplimiento: { nivel: 'alto' },
        });
        expect(
          expectValidation(
            await refused(() => postKyc(company.uuid, { data: { razonSocial: 'Otra' } }, own)),
          ),
        ).toStrictEqual([{ path: expect.any(String), message: expect.any(String), type: 'duplicate' }]);
      },
    );

    it('documents the 403 of PATCH /v1/companies/{uuid} and PATCH /v1/users/{uuid}', () => {
      for (const path of ['/companies/{uuid}', '/users/{uuid}']) {
        const operation = t.openApi.paths[path]?.patch;
        expect({ path, forbidden: operation?.responses['403'] }).toStrictEqual({
          path,
          forbidden: expect.objectContaining({
            description: expect.stringContaining('INSUFFICIENT_PERMISSIONS'),
          }),
        });
        expect(operation?.description).toContain('403 INSUFFICIENT_PERMISSIONS');
      }
    });
  });

  describe('DELETE /v1/companies/{uuid}', () => {
    it('answers 204 without a body; the company is gone from the API but kept in the table', async () => {
      const company = await created();
      const response = await deleteCompany(company.uuid);
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expectNotFound(await getCompany(company.uuid), company.uuid);
      expectNotFound(await deleteCompany(company.uuid), company.uuid);
      expectNotFound(await getKyc(company.uuid), company.uuid);
      const listed = ((await listCompanies({ limit: 500 })).body as CompanyView[]).map((item) => item.uuid);
      expect(listed).not.toContain(company.uuid);
      const row = await companyRow(company.uuid);
      expect(row.deleted_at).toBeInstanceOf(Date);
      expect(row.name).toBe('Yerba Sur');
    });

    it("answers 404 for unknown and another application's companies (which stay)", async () => {
      const unknown = randomUUID();
      expectNotFound(await deleteCompany(unknown), unknown);
      const inB = await created(companyBody(), tokenB);
      expectNotFound(await deleteCompany(inB.uuid), inB.uuid);
      expect((await companyRow(inB.uuid)).deleted_at).toBeNull();
      expectValidation(await deleteCompany('not-a-uuid'));
    });
  });

  describe('company KYC data', () => {
    it('GET before any data answers the four sections as null', async () => {
      const company = await created();
      const response = await getKyc(company.uuid);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        companyId: company.uuid,
        datosBasicos: null,
        estructuraCorporativa: null,
        gestionDeRiesgo: null,
        monitoreoDeCumplimiento: null,
        updated: null,
      });
    });

    it('POST {data} sets datosBasicos (201); a second POST is a duplicate; PATCH still changes it', async () => {
      const company = await created();
      const data = {
        razonSocial: 'Yerba Sur S.R.L.',
        fechaConstitucion: '2010-05-01',
        socios: [{ cuit: '20123456786' }],
      };
      const response = await postKyc(company.uuid, { data });
      expect(response.status).toBe(201);
      expect(response.body).toStrictEqual({
        companyId: company.uuid,
        datosBasicos: data,
        estructuraCorporativa: null,
        gestionDeRiesgo: null,
        monitoreoDeCumplimiento: null,
        updated: expect.any(String),
      });
      expect((await getKyc(company.uuid)).body).toStrictEqual(response.body);
      expect(
        expectValidation(await refused(() => postKyc(company.uuid, { data: { other: true } }))),
      ).toStrictEqual([{ path: expect.any(String), message: expect.any(String), type: 'duplicate' }]);
      const patched = await patchCompany(company.uuid, {
        dataSection: 'datosBasicos',
        data: { other: true },
      });
      expect(patched.body.datosBasicos).toStrictEqual({ other: true });
    });

    it('POST works when another section was given first', async () => {
      const company = await created();
      await patchCompany(company.uuid, { dataSection: 'monitoreoDeCumplimiento', data: { alertas: 0 } });
      const response = await postKyc(company.uuid, { data: { a: 1 } });
      expect(response.status).toBe(201);
      expect(response.body).toMatchObject({
        datosBasicos: { a: 1 },
        monitoreoDeCumplimiento: { alertas: 0 },
      });
    });

    it('validates CreateCompanyKYCDataRequest', async () => {
      const company = await created();
      const cases: [unknown, Record<string, string>][] = [
        [{}, { data: 'required' }],
        [{ data: 'x' }, { data: 'invalid' }],
        [{ data: [] }, { data: 'invalid' }],
        [{ data: {}, dataSection: 'datosBasicos' }, { dataSection: 'invalid' }],
      ];
      for (const [body, expected] of cases) {
        expect(byPath(expectValidation(await refused(() => postKyc(company.uuid, body))))).toStrictEqual(
          expected,
        );
      }
    });

    it("answers 404 for unknown and another application's companies", async () => {
      const unknown = randomUUID();
      expectNotFound(await refused(() => postKyc(unknown, { data: {} })), unknown);
      expectNotFound(await getKyc(unknown), unknown);
      const inB = await created(companyBody(), tokenB);
      expectNotFound(await refused(() => postKyc(inB.uuid, { data: {} })), inB.uuid);
      expectNotFound(await getKyc(inB.uuid), inB.uuid);
      expectNotFound(await history(inB.uuid), inB.uuid);
    });

    it('history lists every change in order with section, previous, current, actor and at; paginated', async () => {
      const company = await created();
      const own = await subjectToken(appA, company.uuid);
      const start = Date.now();
      expect((await postKyc(company.uuid, { data: { v: 1 } })).status).toBe(201);
      // datosBasicos, once given, is the application's to change (decision 0059): the refusal leaves no entry.
      expect(
        (await patchCompany(company.uuid, { dataSection: 'datosBasicos', data: { v: 2 } }, own)).status,
      ).toBe(403);
      expect((await patchCompany(company.uuid, { dataSection: 'datosBasicos', data: { v: 2 } })).status).toBe(
        200,
      );
      expect(
        (await patchCompany(company.uuid, { dataSection: 'gestionDeRiesgo', data: { nivel: 'bajo' } }))
          .status,
      ).toBe(200);
      expect((await patchCompany(company.uuid, { dataSection: 'nope', data: {} })).status).toBe(400);
      expect(
        (await patchCompany(company.uuid, { dataSection: 'gestionDeRiesgo', data: { nivel: 'alto' } }, own))
          .status,
      ).toBe(200);

      const response = await history(company.uuid);
      expect(response.status).toBe(200);
      const entries = response.body as HistoryEntry[];
      const common = {
        id: expect.any(String),
        ownerType: 'COMPANY',
        ownerId: company.uuid,
        at: expect.any(String),
      };
      const client = `client:${appA.appId}`;
      const subject = `subject:${company.uuid}`;
      expect(entries).toStrictEqual([
        { ...common, section: 'datosBasicos', previous: null, current: { v: 1 }, actor: client },
        { ...common, section: 'datosBasicos', previous: { v: 1 }, current: { v: 2 }, actor: client },
        { ...common, section: 'gestionDeRiesgo', previous: null, current: { nivel: 'bajo' }, actor: client },
        {
          ...common,
          section: 'gestionDeRiesgo',
          previous: { nivel: 'bajo' },
          current: { nivel: 'alto' },
          actor: subject,
        },
      ]);
      const times = entries.map((entry) => Date.parse(entry.at));
      expect([...times].sort((a, b) => a - b)).toStrictEqual(times);
      expect(times[0]).toBeGreaterThanOrEqual(start - 5_000);

      const { pages, cursors } = await allPages<HistoryEntry>(
        t.http,
        `${kycPath(company.uuid)}/history`,
        tokenA,
        3,
      );
      expect(pages.map((page) => page.length)).toStrictEqual([3, 1]);
      expect(cursors).toHaveLength(1);
      expect(pages.flat()).toStrictEqual(entries);
      expect(byPath(expectValidation(await history(company.uuid, { cursor: 'garbage' })))).toStrictEqual({
        cursor: 'invalid',
      });
      expect(byPath(expectValidation(await history(company.uuid, { limit: 501 })))).toStrictEqual({
        limit: 'invalid',
      });
    });

    it('history is for client credentials only; another company’s history is not mixed in', async () => {
      const company = await created();
      const other = await created();
      await patchCompany(other.uuid, { dataSection: 'datosBasicos', data: { other: true } });
      expectUnauthorized(await history(company.uuid, {}, await subjectToken(appA, company.uuid)));
      const response = await history(company.uuid);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual([]);
    });
  });

  it('a CNPJ helper sanity check: the digits of the public example', () => {
    expect(cnpjDigits('112223330001')).toBe('81');
  });
});
