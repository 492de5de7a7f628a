import request from 'supertest';
import { KYC_SECTION_MAX_BYTES } from '../src/modules/companies/company-kyc-data.service.js';
import { KYC_HISTORY_PAGE_MAX_BYTES } from '../src/modules/kyc/history/kyc-history.js';
import { accessToken, registerClient } from './support/auth.js';
import { companyBody } from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** A section whose JSON is exactly `bytes` long. */
const sectionOf = (bytes: number) => ({ texto: 'x'.repeat(bytes - '{"texto":""}'.length) });

describe('KYC data bounded in bytes (decision 0074)', () => {
  let t: TestApp;
  let token: string;
  let companyId: string;

  const auth = () => ({ Authorization: `Bearer ${token}` });
  const historyRows = async () =>
    (
      (await t.dataSource.query('SELECT count(*)::int AS n FROM kyc_history WHERE owner_id = $1', [
        companyId,
      ])) as { n: number }[]
    )[0].n;

  beforeAll(async () => {
    t = await startTestApp();
    token = await accessToken(t.http, await registerClient(t.app));
    companyId = (await request(t.http).post('/v1/companies').set(auth()).send(companyBody())).body
      .uuid as string;
  });
  afterAll(() => t.close());

  it('refuses a section over KYC_SECTION_MAX_BYTES as JSON with the 400 at data, and writes nothing', async () => {
    expect(JSON.stringify(sectionOf(KYC_SECTION_MAX_BYTES)).length).toBe(KYC_SECTION_MAX_BYTES);
    const before = await historyRows();
    const data = sectionOf(KYC_SECTION_MAX_BYTES + 1);
    for (const send of [
      () => request(t.http).post(`/v1/companies/${companyId}/kyc-data`).set(auth()).send({ data }),
      () =>
        request(t.http)
          .patch(`/v1/companies/${companyId}`)
          .set(auth())
          .send({ dataSection: 'gestionDeRiesgo', data }),
    ]) {
      const refused = await send();
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({
        name: 'ValidationError',
        message: expect.any(String),
        detail: { items: [{ path: 'data', message: expect.any(String), type: 'invalid' }] },
      });
    }
    expect(await historyRows()).toBe(before);
    const taken = await request(t.http)
      .patch(`/v1/companies/${companyId}`)
      .set(auth())
      .send({ dataSection: 'gestionDeRiesgo', data: sectionOf(KYC_SECTION_MAX_BYTES) });
    expect(taken.status).toBe(200);
    expect(await historyRows()).toBe(before + 1);
  });

  it('ends a history page at KYC_HISTORY_PAGE_MAX_BYTES, at least one entry, the rest on the next pages', async () => {
    // Entries of 400 KB each (as large sections written before the cap left them): two fit in a page.
    const large = KYC_HISTORY_PAGE_MAX_BYTES * 0.4;
    companyId = (await request(t.http).post('/v1/companies').set(auth()).send(companyBody())).body
      .uuid as string;
    for (let i = 0; i < 5; i++) {
      await t.dataSource.query(
        `INSERT INTO kyc_history (app_id, owner_type, owner_id, section, previous, current, actor)
         SELECT app_id, 'COMPANY', id, 'monitoreoDeCumplimiento', NULL, $2::jsonb, 'client:test' FROM companies
          WHERE id = $1`,
        [companyId, JSON.stringify({ i, ...sectionOf(large) })],
      );
    }
    const pages: number[] = [];
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await request(t.http)
        .get(`/v1/companies/${companyId}/kyc-data/history`)
        .query({ limit: 500, ...(cursor ? { cursor } : {}) })
        .set(auth());
      expect(page.status).toBe(200);
      const entries = page.body as { id: string; current: unknown }[];
      expect(Buffer.byteLength(page.text)).toBeLessThan(KYC_HISTORY_PAGE_MAX_BYTES + 4096);
      pages.push(entries.length);
      seen.push(...entries.map((entry) => entry.id));
      cursor = page.headers['x-next-cursor'] as string | undefined;
    } while (cursor);
    expect(pages).toEqual([2, 2, 1]);
    expect(seen).toHaveLength(5);
    expect([...seen].sort((a, b) => Number(a) - Number(b))).toEqual(seen);
  });
});
