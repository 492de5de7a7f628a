import { randomInt } from 'node:crypto';
import type { Server } from 'node:http';
import request from 'supertest';
import type { DataSource } from 'typeorm';

/**
 * Builders for the identity suites: valid bodies, and valid tax ids computed
 * here from the published algorithms (not through src/modules/kyc/tax-id.ts,
 * so that a bug there cannot hide itself).
 */

const CUIT_WEIGHTS = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2];

/** AFIP mod 11: 11 − (Σ dᵢ·wᵢ mod 11), 11 → 0, 10 → no valid number. */
export function cuitDigit(first10: string): number | undefined {
  const sum = CUIT_WEIGHTS.reduce((acc, weight, i) => acc + weight * Number(first10[i]), 0);
  const check = 11 - (sum % 11);
  return check === 11 ? 0 : check === 10 ? undefined : check;
}

let documentCounter = randomInt(10_000_000, 80_000_000);

/** A fresh valid CUIT/CUIL (11 digits) with the given type prefix. */
export function newCuit(prefix: string): string {
  for (;;) {
    const first10 = `${prefix}${String(documentCounter++).padStart(8, '0')}`;
    const digit = cuitDigit(first10);
    if (digit !== undefined) return `${first10}${digit}`;
  }
}

/** The same number with its check digit changed. */
export const withWrongCheckDigit = (cuit: string): string =>
  `${cuit.slice(0, -1)}${(Number(cuit.slice(-1)) + 1) % 10}`;

/** 20123456786 → 20-12345678-6 */
export const dashed = (cuit: string): string => `${cuit.slice(0, 2)}-${cuit.slice(2, 10)}-${cuit.slice(10)}`;

/** Receita Federal: two mod 11 digits over weights 2..9 from the right (remainder < 2 → 0). */
export function cnpjDigits(first12: string): string {
  const digit = (base: string) => {
    let sum = 0;
    for (let i = 0; i < base.length; i++) sum += Number(base[base.length - 1 - i]) * ((i % 8) + 2);
    const rest = sum % 11;
    return rest < 2 ? 0 : 11 - rest;
  };
  const first = digit(first12);
  return `${first}${digit(`${first12}${first}`)}`;
}

let cnpjCounter = randomInt(10_000_000, 90_000_000);

/** A fresh valid CNPJ (14 digits). */
export function newCnpj(): string {
  const base = `${cnpjCounter++}0001`;
  return `${base}${cnpjDigits(base)}`;
}

export const legalAddress = () => ({
  streetName: 'Avenida Corrientes',
  streetNumber: '1234',
  floor: '5',
  apartment: 'B',
  zipCode: 'C1043AAZ',
  neighborhood: 'San Nicolás',
  city: 'Buenos Aires',
  region: 'CABA',
  country: 'AR',
});

export interface CreateUserBody {
  firstName: string;
  lastName: string;
  birthdate: string;
  sex: string;
  civilStatus: string;
  nationality: string;
  legalInformation: {
    taxIdType: string;
    taxId: string;
    taxCondition: string;
    category: string;
    taxExempt: boolean;
  };
  legalAddress: ReturnType<typeof legalAddress>;
}

/** A full, valid CreateUserRequest with a fresh CUIL. */
export function userBody(taxId = newCuit('20')): CreateUserBody {
  return {
    firstName: 'María',
    lastName: 'González',
    birthdate: '1990-04-21',
    sex: 'female',
    civilStatus: 'single',
    nationality: 'AR',
    legalInformation: {
      taxIdType: 'cuil',
      taxId,
      taxCondition: 'others',
      category: 'consumidorFinal',
      taxExempt: false,
    },
    legalAddress: legalAddress(),
  };
}

export interface CreateCompanyBody {
  name: string;
  legalName: string;
  tradeName: string;
  companyType: string;
  taxType: string;
  taxValue: string;
  taxCondition: string;
  operationCountry: string;
  legalAddress: ReturnType<typeof legalAddress>;
}

/** A full, valid CreateCompanyRequest with a fresh company CUIT. */
export function companyBody(taxValue = newCuit('30')): CreateCompanyBody {
  return {
    name: 'Yerba Sur',
    legalName: 'Yerba Sur S.R.L.',
    tradeName: 'Yerba Sur',
    companyType: 'SRL',
    taxType: 'CUIT',
    taxValue,
    taxCondition: 'VAT_REGISTERED',
    operationCountry: 'AR',
    legalAddress: legalAddress(),
  };
}

export interface ValidationItem {
  path: string;
  message: string;
  type: string;
}

/** Asserts the interface's validation error body and returns its items. */
export function expectValidation(response: request.Response): ValidationItem[] {
  expect(response.status).toBe(400);
  expect(response.body).toStrictEqual({
    name: 'ValidationError',
    message: expect.any(String),
    detail: { items: expect.any(Array) },
  });
  const items = response.body.detail.items as ValidationItem[];
  expect(items.length).toBeGreaterThan(0);
  for (const item of items) {
    expect(item).toStrictEqual({
      path: expect.any(String),
      message: expect.any(String),
      type: expect.stringMatching(/^(required|invalid|notfound|duplicate)$/),
    });
  }
  return items;
}

export function expectNotFound(response: request.Response, item: string): void {
  expect(response.status).toBe(404);
  expect(response.body).toStrictEqual({
    name: 'NotFoundError',
    message: expect.any(String),
    detail: { item },
  });
}

export function expectUnauthorized(response: request.Response): void {
  expect(response.status).toBe(401);
  expect(response.body).toStrictEqual({ name: 'UnauthorizedError', message: expect.any(String) });
}

export const bearer = (token: string): string => `Bearer ${token}`;

/** Rows of a table, soft-deleted ones included. */
export async function countRows(dataSource: DataSource, table: string): Promise<number> {
  const [row] = (await dataSource.query(`SELECT count(*)::int AS n FROM "${table}"`)) as { n: number }[];
  return row.n;
}

/** Follows X-Next-Cursor through every page of a list route; returns the pages. */
export async function allPages<T>(
  http: Server,
  path: string,
  token: string,
  limit: number,
): Promise<{ pages: T[][]; cursors: string[] }> {
  const pages: T[][] = [];
  const cursors: string[] = [];
  let cursor: string | undefined;
  for (let guard = 0; guard < 1000; guard++) {
    const response = await request(http)
      .get(path)
      .query({ limit, ...(cursor ? { cursor } : {}) })
      .set('Authorization', bearer(token));
    expect(response.status).toBe(200);
    expect(Array.isArray(response.body)).toBe(true);
    pages.push(response.body as T[]);
    const next = response.headers['x-next-cursor'] as string | undefined;
    if (!next) return { pages, cursors };
    cursors.push(next);
    cursor = next;
  }
  throw new Error('pagination did not end');
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Validation items as `{path: type}`. */
export const byPath = (items: ValidationItem[]) =>
  Object.fromEntries(items.map((item) => [item.path, item.type]));

/** An entry of GET …/kyc-data/history. */
export interface HistoryEntry {
  id: string;
  ownerType: string;
  ownerId: string;
  section: string;
  previous: unknown;
  current: unknown;
  actor: string;
  at: string;
}

type Query = Record<string, string | number>;

/**
 * The routes of `/v1/users` or `/v1/companies` (`base`), sent as `token()` unless a token is given: the two
 * resources answer the same five routes.
 */
export function ownerRoutes(http: () => Server, base: '/v1/users' | '/v1/companies', token: () => string) {
  const api = () => request(http());
  return {
    create: (body: unknown, as = token()) =>
      api()
        .post(base)
        .set('Authorization', bearer(as))
        .send(body as object),
    get: (uuid: string, as = token()) => api().get(`${base}/${uuid}`).set('Authorization', bearer(as)),
    patch: (uuid: string, body: unknown, as = token()) =>
      api()
        .patch(`${base}/${uuid}`)
        .set('Authorization', bearer(as))
        .send(body as object),
    remove: (uuid: string, as = token()) => api().delete(`${base}/${uuid}`).set('Authorization', bearer(as)),
    list: (query: Query = {}, as = token()) =>
      api().get(`${base}/all`).query(query).set('Authorization', bearer(as)),
  };
}

/** The KYC data routes of a user or company under `base`, sent as `token()` unless a token is given. */
export function kycDataRoutes(http: () => Server, base: '/v1/users' | '/v1/companies', token: () => string) {
  const api = () => request(http());
  const path = (uuid: string) => `${base}/${uuid}/kyc-data`;
  return {
    path,
    post: (uuid: string, body: unknown, as = token()) =>
      api()
        .post(path(uuid))
        .set('Authorization', bearer(as))
        .send(body as object),
    get: (uuid: string, as = token()) => api().get(path(uuid)).set('Authorization', bearer(as)),
    patch: (uuid: string, body: unknown, as = token()) =>
      api()
        .patch(path(uuid))
        .set('Authorization', bearer(as))
        .send(body as object),
    history: (uuid: string, query: Query = {}, as = token()) =>
      api()
        .get(`${path(uuid)}/history`)
        .query(query)
        .set('Authorization', bearer(as)),
  };
}

/** Sends a request that must be refused and asserts that none of `tables` gained or lost a row. */
export async function expectRefusedWithoutWrites(
  dataSource: DataSource,
  tables: readonly string[],
  send: () => Promise<request.Response>,
): Promise<request.Response> {
  const before = await Promise.all(tables.map((table) => countRows(dataSource, table)));
  const response = await send();
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(await Promise.all(tables.map((table) => countRows(dataSource, table)))).toStrictEqual(before);
  return response;
}

/** The smallest PNG: a document every storage accepts. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** supertest's parser for a download: the bytes as they arrive. */
export const binary = (res: request.Response, done: (error: Error | null, body: Buffer) => void) => {
  const stream = res as unknown as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.on('end', () => done(null, Buffer.concat(chunks)));
};
