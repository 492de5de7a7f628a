import { randomUUID } from 'node:crypto';
import type { OpenAPIObject } from '@nestjs/swagger';
import { Ajv, type ValidateFunction } from 'ajv';
import fc from 'fast-check';
import request from 'supertest';
import { accessToken, clientAssertion, registerClient, type TestClient } from './support/auth.js';
import { bearer, companyBody, countRows, userBody } from './support/identity.js';
import { WebhooksService } from '../src/modules/webhooks/webhooks.service.js';
import { OPENAPI_FORMATS, serverPath } from './support/openapi.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { counterParty, DIRECTORY, postTransfer, transferBody } from './support/transfers.js';
import { accountBody, createOwner, openAccount, setBalance } from './support/wallet.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';

/**
 * Suite 5 of issue 9: input fuzzing generated from the OpenAPI document.
 * Every operation of the document is called with random valid and invalid
 * bodies, query strings and path ids; no answer may be a 5xx or a status the
 * operation does not document, every JSON body must validate against the
 * documented schema of its status with objects closed (no property beyond the
 * documented ones, required ones present), error bodies keep the interface's
 * shape, refused requests write nothing, and create routes refuse server-owned
 * properties.
 *
 * Reproduce a failure with FUZZ_SEED=<seed> (printed on failure); FUZZ_RUNS
 * sets the runs per operation, FUZZ_SHRINK=1 shrinks a counterexample.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
/** A property test's timeout, `ms` at the default 40 runs, in proportion above (a timed-out test's requests ran on into the next tests). */
const timeoutFor = (ms: number) => Math.max(ms, Math.ceil((ms * RUNS) / 40));
const SHRINK = process.env.FUZZ_SHRINK === '1';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');

const ERROR_ITEM_TYPES = new Set(['required', 'invalid', 'notfound', 'duplicate']);
const FORBIDDEN_REASONS = new Set(['FORBIDDEN', 'INSUFFICIENT_PERMISSIONS', 'INVALID_STATE']);
const MAIN_TABLES = [
  'users',
  'companies',
  'wallet_accounts',
  'journal_entries',
  'postings',
  'documents',
  'kyc_sessions',
  'sms_messages',
  'webhook_events',
];
/** The token routes: their own error body for JSON, RFC 6749's for a form (docs/decisions/0024). */
const TOKEN_PATHS = new Set(['/v1/oauth/app/token', '/v1/oauth/token']);
const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** RFC 6749 §5.2: error_description is printable ASCII without `"` and `\`. */
const RFC6749_DESCRIPTION = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
type HttpMethod = (typeof HTTP_METHODS)[number];

/** The subset of JSON Schema the document uses. */
interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  example?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  nullable?: boolean;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  additionalProperties?: boolean | Schema;
}

/** What an operation documents for one status: the schema of each content type (undefined: no schema). */
type DocumentedResponse = Map<string, Schema | undefined>;

interface Operation {
  method: HttpMethod;
  path: string;
  label: string;
  documented: Set<number>;
  responses: Map<number, DocumentedResponse>;
  body?: { kind: 'json' | 'multipart'; schema: Schema; name?: string };
  /** The schema of the urlencoded form the operation takes instead (POST /oauth/token, RFC 6749). */
  form?: Schema;
  pathParams: { name: string; schema: Schema }[];
  queryParams: string[];
}

interface FuzzRequest {
  url: string;
  /** A raw JSON text, a raw urlencoded form, multipart fields, or nothing. */
  body?: { json: string } | { form: string } | { fields: Partial<Record<string, string>>; file?: Buffer };
}

interface OperationDoc {
  parameters?: { in: string; name: string; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

/**
 * Every operation of the document, DELETEs last (they remove the resources the others use). Paths are relative to
 * the server, `{base_url}`: each operation's path here is the server's path before it (`/v1/users`).
 */
function operationsOf(document: OpenAPIObject): Operation[] {
  const operations: Operation[] = [];
  const base = serverPath(document);
  for (const [relative, item] of Object.entries(document.paths)) {
    const path = `${base}${relative}`;
    for (const [method, raw] of Object.entries(item as Record<string, unknown>)) {
      if (method === 'parameters' || method === 'summary' || method === 'description') continue;
      if (!(HTTP_METHODS as readonly string[]).includes(method))
        throw new Error(`the fuzzer does not know the method ${method} of ${path}`);
      const doc = raw as OperationDoc;
      const parameters = doc.parameters ?? [];
      let body: Operation['body'];
      const form = doc.requestBody?.content['application/x-www-form-urlencoded']?.schema;
      if (doc.requestBody && !form) {
        const types = Object.keys(doc.requestBody.content);
        const kind = types.includes('application/json')
          ? 'json'
          : types.includes('multipart/form-data')
            ? 'multipart'
            : undefined;
        if (!kind) throw new Error(`the fuzzer does not know the body types ${types.join()} of ${path}`);
        const schema =
          doc.requestBody.content[kind === 'json' ? 'application/json' : 'multipart/form-data'].schema;
        body = { kind, schema, name: schema.$ref?.split('/').pop() };
      }
      operations.push({
        method: method as HttpMethod,
        path,
        label: `${method.toUpperCase()} ${path}`,
        documented: new Set(Object.keys(doc.responses).map(Number)),
        responses: new Map(
          Object.entries(doc.responses).map(([status, response]) => [
            Number(status),
            new Map(Object.entries(response.content ?? {}).map(([type, media]) => [type, media.schema])),
          ]),
        ),
        body,
        form,
        pathParams: parameters
          .filter((parameter) => parameter.in === 'path')
          .map((parameter) => ({ name: parameter.name, schema: parameter.schema ?? {} })),
        queryParams: parameters
          .filter((parameter) => parameter.in === 'query')
          .map((parameter) => parameter.name),
      });
    }
  }
  return [
    ...operations.filter((operation) => operation.method !== 'delete'),
    ...operations.filter((operation) => operation.method === 'delete'),
  ];
}

describe('input fuzzing generated from the OpenAPI document', () => {
  let t: TestApp;
  let client: TestClient;
  let token: string;
  let operations: Operation[];
  const ids: Record<string, string> = {};
  /** An owner without an account, for the control request of the account create route. */
  let spareOwner: string | undefined;
  let accountAlias: string;
  /** Single-use client assertions for valid token requests. */
  const assertions: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
        SMS_APP_LIMIT_PER_MINUTE: '1000000',
        SMS_APP_LIMIT_PER_DAY: '100000000',
        SMS_DESTINATION_LIMIT_PER_HOUR: '1000000',
        SMS_USER_LIMIT_PER_HOUR: '1000000',
        SIM_SWAP_APP_LIMIT_PER_MINUTE: '1000000',
        SIM_SWAP_USER_LIMIT_PER_HOUR: '1000000',
        DOCUMENT_UPLOADS_PER_OWNER_PER_DAY: '100000',
        SMS_SIM_DELIVERY_DELAY_MS: '0',
        KYC_SIM_DELAY_MS: '0',
      },
    });
    operations = operationsOf(t.openApi);
    client = await registerClient(t.app);
    token = await accessToken(t.http, client);
    // One-time assertions for the token routes' valid bodies: 300 at the default 40 runs, in proportion above
    // (at 500 runs they ran out, and the mass assignment test's control was refused as 'exhausted').
    for (let i = 0; i < Math.max(300, Math.ceil((300 * RUNS) / 40)); i++)
      assertions.push(await clientAssertion(client, { claims: { jti: randomUUID() } }));
    ids.app = client.appId;
    ids.users = await createOwner(t.http, token, 'USER');
    ids.companies = await createOwner(t.http, token, 'COMPANY');
    const account = await openAccount(t.http, token, client.appId, ids.users);
    ids.accounts = account.uuid;
    accountAlias = account.alias;
    await setBalance(t.http, token, ids.accounts, 1_000_000);
    const transfer = await postTransfer(t.http, token, knownBodies.CreateTransactionRequest());
    expect({ status: transfer.status, body: transfer.body as unknown }).toMatchObject({ status: 201 });
    ids.transactions = transfer.body.uuid as string;
    const document = await request(t.http)
      .post(`/v1/users/${ids.users}/documents`)
      .set('Authorization', bearer(token))
      .field('documentType', 'DNI_FRONT')
      .attach('file', PNG, 'front.png');
    expect(document.status).toBe(201);
    ids.documents = document.body.uuid as string;
    ids.events = (await t.app.get(WebhooksService).sendTest(client.appId, cliActor('test'))).eventId;
    const session = await request(t.http)
      .post('/v1/kyc/sessions')
      .set('Authorization', bearer(token))
      .send({ ownerType: 'USER', ownerId: ids.users });
    expect(session.status).toBe(201);
    ids.sessions = session.body.uuid as string;
    const sms = await request(t.http)
      .post('/v1/mobile/sms')
      .set('Authorization', bearer(token))
      .send({ dnis: '541123456789', message: 'fuzz' });
    expect(sms.status).toBe(200);
    ids.sms = sms.body.message_id as string;
    expect(ids.sms).toMatch(UUID);
    // Let the simulated receipts of the set-up land before tables are counted.
    await new Promise((resolve) => setTimeout(resolve, 300));
  });

  afterAll(async () => {
    await t?.close();
  });

  /** The real resource a path with {uuid} names, from the segment before it. */
  function realIdFor(path: string): string {
    const segment = /\/([^/]+)\/\{uuid\}/.exec(path)?.[1];
    const id = segment ? ids[segment] : undefined;
    if (!id) throw new Error(`no real resource known for ${path}: add one to the fuzz set-up`);
    return id;
  }

  // ---------- arbitraries ----------

  /** The schema itself, or the component it names (`$ref`, or an `allOf` of one, as a described enum is written). */
  const resolve = (schema: Schema): Schema => {
    if (schema.allOf?.length === 1 && !schema.properties) return resolve(schema.allOf[0]);
    if (!schema.$ref) return schema;
    const name = schema.$ref.replace('#/components/schemas/', '');
    const target = t.openApi.components?.schemas?.[name] as Schema | undefined;
    if (!target) throw new Error(`unresolvable $ref ${schema.$ref}`);
    return target;
  };

  const realUuids = () => fc.constantFrom(...Object.values(ids));

  /** Values the schema accepts (as far as types, formats and enums go). */
  function validValue(raw: Schema, depth = 0): fc.Arbitrary<unknown> {
    const schema = resolve(raw);
    if (schema.enum) return fc.constantFrom(...schema.enum);
    if (schema.properties || schema.type === 'object') return validObject(schema, depth);
    switch (schema.type) {
      case 'string':
        return validString(schema);
      case 'number':
        return fc.oneof(
          fc.integer({ min: 0, max: 1_000_000 }),
          fc.double({ min: 0, max: 1_000_000, noNaN: true }).map((n) => Math.round(n * 100) / 100),
        );
      case 'integer':
        return fc.integer({ min: 0, max: 1000 });
      case 'boolean':
        return fc.boolean();
      case 'array':
        return fc.array(validValue(schema.items ?? {}, depth + 1), { maxLength: 3 });
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  }

  function validString(schema: Schema): fc.Arbitrary<string> {
    switch (schema.format) {
      case 'uuid':
        return fc.oneof(realUuids(), fc.uuid());
      case 'date':
        return fc
          .date({ min: new Date('1900-01-02'), max: new Date('2020-12-31'), noInvalidDate: true })
          .map((date) => date.toISOString().slice(0, 10));
      case 'date-time':
        return fc.date({ noInvalidDate: true }).map((date) => date.toISOString());
      case 'email':
        return fc.emailAddress();
      default:
        break;
    }
    if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
    const strings = fc.string({
      minLength: schema.minLength ?? 0,
      maxLength: Math.min(schema.maxLength ?? 40, 40),
    });
    return schema.example === undefined ? strings : fc.oneof(fc.constant(String(schema.example)), strings);
  }

  function validObject(schema: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
    const properties = schema.properties ?? {};
    const model = Object.fromEntries(
      Object.entries(properties).map(([key, value]) => [key, validValue(value, depth + 1)]),
    );
    return fc.record(model, { requiredKeys: (schema.required ?? []).filter((key) => key in properties) });
  }

  const hugeStrings = fc.constantFrom(1_000, 20_000, 60_000, 150_000).map((n) => 'é'.repeat(n));
  const unicodeStrings = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.constantFrom(
      '\u0000',
      'a\u0000b',
      '\ud800',
      'x\udfffy',
      '👨‍👩‍👧‍👦',
      'ＡＲ',
      'a\u202eb',
      '\ufeff',
      "'; DROP TABLE users; --",
      '../../etc/passwd',
      '%00',
      '${jndi:ldap://x}',
    ),
  );
  const manyDecimals = fc.constantFrom(
    0.1 + 0.2,
    1.23456789012345,
    123456789.12345679,
    '123456789.123456789123456789',
    0.000000001,
    1e-300,
    Number.MIN_VALUE,
    1e21,
    1e300,
    Number.MAX_VALUE,
    Number.MAX_SAFE_INTEGER + 2,
    -0,
  );
  const negatives = fc.oneof(
    fc.constantFrom(-1, -0.01, -1e21, -Number.MAX_VALUE),
    fc.double({ max: -Number.MIN_VALUE, noNaN: true, noDefaultInfinity: true }),
  );
  const nanLike = fc.constantFrom(
    'NaN',
    'Infinity',
    '-Infinity',
    '1e999',
    '0x10',
    ' 12 ',
    '1,5',
    '',
    'null',
    'true',
  );
  const deepNesting = fc.integer({ min: 20, max: 40 }).map((depth) => {
    let value: unknown = 1;
    for (let i = 0; i < depth; i++) value = { a: value };
    return value;
  });
  const wrongTypes = fc.oneof(
    fc.integer(),
    fc.string({ maxLength: 10 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer(), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
  );

  /** Values the schema should refuse (or edge cases it may accept). */
  const invalidValue = (): fc.Arbitrary<unknown> =>
    fc.oneof(
      wrongTypes,
      hugeStrings,
      unicodeStrings,
      manyDecimals,
      negatives,
      nanLike,
      fc.jsonValue({ maxDepth: 4 }),
      deepNesting,
    );

  /** Property names no request schema declares, server-owned ones first. */
  const extraKeys = fc.oneof(
    fc.constantFrom(
      'balance',
      'status',
      'id',
      'uuid',
      'appId',
      'createdAt',
      'ownerId',
      'constructor',
      'isAdmin',
    ),
    fc.string({ minLength: 1, maxLength: 12 }),
  );

  /** An object of the schema with each value sometimes invalid, keys sometimes missing, extras sometimes added. */
  function fuzzObject(raw: Schema, depth = 0): fc.Arbitrary<Record<string, unknown>> {
    const schema = resolve(raw);
    const properties = schema.properties ?? {};
    const model = Object.fromEntries(
      Object.entries(properties).map(([key, value]) => [key, fuzzValue(value, depth + 1)]),
    );
    return fc
      .tuple(
        fc.record(model, { requiredKeys: [] }),
        fc.dictionary(extraKeys, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }),
        fc.boolean(),
      )
      .map(([record, extras, addExtras]) => (addExtras ? { ...extras, ...record } : record));
  }

  function fuzzValue(raw: Schema, depth: number): fc.Arbitrary<unknown> {
    const schema = resolve(raw);
    const nested = schema.properties && depth < 4;
    return fc.oneof(
      { arbitrary: nested ? fuzzObject(schema, depth) : validValue(schema, depth), weight: 4 },
      { arbitrary: invalidValue(), weight: 2 },
    );
  }

  /** Full valid bodies the domain accepts (tax ids with check digits, real owners). */
  const knownBodies: Record<string, () => Record<string, unknown>> = {
    CreateUserRequest: () => ({ ...userBody() }),
    CreateCompanyRequest: () => ({ ...companyBody() }),
    CreateAccountRequest: () => accountBody(client.appId, spareOwner ?? ids.users),
    CreateKycSessionRequest: () => ({ ownerType: 'USER', ownerId: ids.users }),
    SMSSendRequest: () => ({ dnis: '541123456789', message: 'fuzz' }),
    SimSwapRequest: () => ({ phoneNumber: '541123456789' }),
    TokenRequest: () => ({
      appId: client.appId,
      token: assertions.pop() ?? 'exhausted',
      grantType: 'client_credentials',
    }),
    SetBalanceRequest: () => ({ balance: 100 }),
    CounterpartyRequest: () => ({ destinatario: accountAlias }),
    CreateTransactionRequest: () => ({
      ...transferBody(ids.accounts, DIRECTORY.nacion.number, 1),
      counterParty: counterParty(DIRECTORY.nacion.number, DIRECTORY.nacion.cuit, DIRECTORY.nacion.name),
    }),
  };

  /** Full valid forms, by schema name. */
  const knownForms: Record<string, () => Record<string, string>> = {
    OAuthTokenRequest: () => ({
      grant_type: 'client_credentials',
      client_id: client.appId,
      client_assertion_type: JWT_BEARER,
      client_assertion: assertions.pop() ?? 'exhausted',
    }),
  };

  type Mutation = { key: string; value?: unknown; drop: boolean };

  /** A known valid body with a few top-level properties replaced, dropped or added. */
  function mutatedKnownBody(name: string, schema: Schema): fc.Arbitrary<unknown> {
    const keys = Object.keys(resolve(schema).properties ?? {});
    const mutation: fc.Arbitrary<Mutation> = fc.record({
      key: keys.length > 0 ? fc.oneof(fc.constantFrom(...keys), extraKeys) : extraKeys,
      value: invalidValue(),
      drop: fc.boolean(),
    });
    return fc.array(mutation, { maxLength: 2 }).map((mutations) => {
      const body = knownBodies[name]();
      for (const { key, value, drop } of mutations) {
        if (drop) delete body[key];
        else body[key] = value;
      }
      return body;
    });
  }

  const malformedJson = fc.constantFrom(
    '{',
    '{"a":1,}',
    'null',
    '[]',
    '[{}]',
    '"text"',
    '42',
    '{"a":1}{"b":2}',
    '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{"admin":true}}}',
    '{"a":"\\u0000"}',
    '{"\\u0000":1}',
    `${'['.repeat(5000)}${']'.repeat(5000)}`,
    `{"a":${'{"a":'.repeat(100)}1${'}'.repeat(100)}}`,
  );

  function bodyArbitrary(operation: Operation): fc.Arbitrary<FuzzRequest['body']> {
    const body = operation.body;
    if (!body) return fc.constant(undefined);
    if (body.kind === 'multipart') {
      const properties = resolve(body.schema).properties ?? {};
      const fields = Object.fromEntries(
        Object.entries(properties)
          .filter(([, schema]) => schema.format !== 'binary')
          .map(([key, schema]) => [
            key,
            fuzzValue(schema, 1).map((value) => (typeof value === 'string' ? value : JSON.stringify(value))),
          ]),
      );
      return fc.oneof(
        fc.record({
          fields: fc.record(fields, { requiredKeys: [] }),
          file: fc.option(
            fc.oneof(
              fc.constant(PNG),
              fc.constant(PDF),
              fc.uint8Array({ minLength: 1, maxLength: 512 }).map((bytes) => Buffer.from(bytes)),
            ),
            { nil: undefined },
          ),
        }),
        fuzzObject(body.schema).map((value) => ({ json: JSON.stringify(value) })),
      );
    }
    const known = body.name && knownBodies[body.name] ? body.name : undefined;
    return fc
      .oneof(
        { arbitrary: validValue(body.schema), weight: 2 },
        { arbitrary: fuzzObject(body.schema), weight: 4 },
        ...(known ? [{ arbitrary: mutatedKnownBody(known, body.schema), weight: 3 }] : []),
        { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 1 },
      )
      .map((value) => JSON.stringify(value))
      .chain((json) =>
        fc.oneof({ arbitrary: fc.constant(json), weight: 9 }, { arbitrary: malformedJson, weight: 1 }),
      )
      .map((json) => ({ json }));
  }

  const asFormValue = (value: unknown): string =>
    typeof value === 'string' ? value : (JSON.stringify(value) ?? '');

  /**
   * Urlencoded bodies: records of the form's schema with fuzzed values, a known valid form with parameters
   * replaced, added or repeated, and text that is hardly a form at all.
   */
  function formArbitrary(operation: Operation): fc.Arbitrary<FuzzRequest['body']> {
    const schema = operation.form!;
    const properties = resolve(schema).properties ?? {};
    const keys = Object.keys(properties);
    const name = schema.$ref?.split('/').pop();
    const fuzzedRecord = fc
      .record(
        Object.fromEntries(
          Object.entries(properties).map(([key, value]) => [key, fuzzValue(value, 1).map(asFormValue)]),
        ),
        { requiredKeys: [] },
      )
      .map((record) =>
        new URLSearchParams(
          Object.entries(record).filter((entry): entry is [string, string] => entry[1] !== undefined),
        ).toString(),
      );
    const mutations = fc.array(
      fc.record({
        key: keys.length > 0 ? fc.oneof(fc.constantFrom(...keys), extraKeys) : extraKeys,
        value: invalidValue().map(asFormValue),
        repeat: fc.boolean(),
      }),
      { maxLength: 2 },
    );
    const mutatedKnown = mutations.map((changes) => {
      const params = new URLSearchParams(knownForms[name!]());
      for (const { key, value, repeat } of changes) {
        if (repeat) params.append(key, value);
        else params.set(key, value);
      }
      return params.toString();
    });
    const text = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.constantFrom('%', '%zz', '&&=&', '=', 'a=%00', 'grant_type', '__proto__=1&constructor=2', '+%2B+'),
    );
    return fc
      .oneof(
        { arbitrary: fuzzedRecord, weight: 3 },
        ...(name && knownForms[name] ? [{ arbitrary: mutatedKnown, weight: 4 }] : []),
        { arbitrary: text, weight: 1 },
      )
      .map((form) => ({ form }));
  }

  const invalidUuids = fc.oneof(
    fc.constantFrom(
      'not-a-uuid',
      '00000000-0000-0000-0000-00000000000g',
      '123',
      '0',
      '-1',
      'null',
      'undefined',
      '..',
      '%00',
      '00000000000000000000000000000000',
      `${randomUUID()}-x`,
      `{${randomUUID()}}`,
    ),
    fc.string({ minLength: 1, maxLength: 40 }).filter((value) => !UUID.test(value)),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
    fc.constant('a'.repeat(5000)),
  );

  function pathArbitrary(operation: Operation, validIdsOnly = false): fc.Arbitrary<string> {
    if (operation.pathParams.length === 0) return fc.constant(operation.path);
    const params = Object.fromEntries(
      operation.pathParams.map(({ name, schema: raw }) => {
        const schema = resolve(raw);
        if (schema.enum) {
          const valid = fc.constantFrom(...schema.enum.map(String));
          return [name, validIdsOnly ? valid : fc.oneof({ arbitrary: valid, weight: 3 }, invalidUuids)];
        }
        if (name !== 'uuid') throw new Error(`the fuzzer does not know the path parameter ${name}`);
        const valid = fc.oneof({ arbitrary: fc.constant(realIdFor(operation.path)), weight: 3 }, fc.uuid());
        return [name, validIdsOnly ? valid : fc.oneof({ arbitrary: valid, weight: 2 }, invalidUuids)];
      }),
    );
    return fc
      .record(params)
      .map((values) => operation.path.replace(/\{(\w+)\}/g, (_match, name: string) => encode(values[name])));
  }

  function queryArbitrary(operation: Operation): fc.Arbitrary<string> {
    const key = fc.oneof(
      ...(operation.queryParams.length > 0 ? [fc.constantFrom(...operation.queryParams)] : []),
      fc.constantFrom('limit', 'cursor', 'page', '__proto__', 'a[b]'),
      fc.string({ maxLength: 8 }),
    );
    const value = fc.oneof(
      fc.integer({ min: -10, max: 1000 }).map(String),
      fc.constantFrom('0', '1', '500', '501', '1e3', '1.5', 'NaN', '', 'null', '%', '%zz', 'a'.repeat(2000)),
      unicodeStrings,
      fc.base64String({ maxLength: 40 }),
    );
    return fc
      .array(fc.tuple(key, value), { maxLength: 4 })
      .map((pairs) =>
        pairs.length === 0
          ? ''
          : `?${pairs.map(([k, v]) => `${encode(k)}=${v.startsWith('%') ? v : encode(v)}`).join('&')}`,
      );
  }

  const requestArbitrary = (operation: Operation, viaForm = false): fc.Arbitrary<FuzzRequest> =>
    fc
      .record({
        path: pathArbitrary(operation),
        query: queryArbitrary(operation),
        body: viaForm ? formArbitrary(operation) : bodyArbitrary(operation),
      })
      .map(({ path, query, body }) => ({ url: `${path}${query}`, body }));

  // ---------- sending and checking ----------

  async function send(operation: Operation, fuzz: FuzzRequest): Promise<request.Response> {
    let call = request(t.http)[operation.method](fuzz.url).set('Authorization', bearer(token));
    if (fuzz.body && 'json' in fuzz.body) {
      call = call.set('Content-Type', 'application/json').send(fuzz.body.json);
    } else if (fuzz.body && 'form' in fuzz.body) {
      call = call.set('Content-Type', 'application/x-www-form-urlencoded').send(fuzz.body.form);
    } else if (fuzz.body) {
      for (const [key, value] of Object.entries(fuzz.body.fields))
        if (value !== undefined) call = call.field(key, value);
      if (fuzz.body.file) call = call.attach('file', fuzz.body.file, 'upload.bin');
    }
    return call;
  }

  const describeResponse = (response: request.Response) =>
    `${response.status} ${response.headers['content-type'] ?? ''} ${String(response.text ?? '').slice(0, 400)}`;

  /**
   * Throws unless the status is one the operation documents, a JSON body validates against the
   * documented schema of that status (objects closed) and an error has the interface's body (RFC 6749's for
   * a form, whose answers are never cached).
   */
  function check(operation: Operation, response: request.Response, viaForm = false): void {
    const status = response.status;
    if (status >= 500) throw new Error(`5xx: ${describeResponse(response)}`);
    if (!operation.documented.has(status))
      throw new Error(
        `${operation.label}: status ${status} is not documented (documented: ${[...operation.documented].join(', ')}): ${describeResponse(response)}`,
      );
    const mismatch = schemaProblem(operation, response);
    if (mismatch) throw new Error(`${operation.label}: ${mismatch}: ${describeResponse(response)}`);
    if (viaForm && response.headers.pragma !== 'no-cache')
      throw new Error(
        `${operation.label}: a form's answer without Pragma: no-cache: ${describeResponse(response)}`,
      );
    if (status < 400) return;
    const problem = errorBodyProblem(operation, response, viaForm);
    if (problem) throw new Error(`${problem}: ${describeResponse(response)}`);
  }

  /** The documented schema of the answer's status and content type, compiled with objects closed. */
  const validators = new Map<string, ValidateFunction>();
  let ajv: Ajv | undefined;

  function schemaProblem(operation: Operation, response: request.Response): string | undefined {
    const documented = operation.responses.get(response.status)!;
    const type = String(response.headers['content-type'] ?? '')
      .split(';')[0]
      .trim();
    const hasBody = response.status !== 204 && response.status !== 304 && String(response.text ?? '') !== '';
    if (!hasBody) return undefined;
    if (type !== 'application/json') {
      // A document's bytes, the mobile routes' text/html NO ROUTES (checked by errorBodyProblem).
      if (documented.size === 0 || documented.has(type)) return undefined;
      return `content type ${type} is not documented for ${response.status} (documented: ${[...documented.keys()].join(', ')})`;
    }
    if (!documented.has('application/json'))
      return `a JSON body, but ${response.status} documents no JSON schema (documented: ${[...documented.keys()].join(', ') || 'no content'})`;
    const schema = documented.get('application/json');
    if (!schema) return `a JSON body, but ${response.status} documents application/json without a schema`;
    const key = `${operation.label} ${response.status}`;
    let validate = validators.get(key);
    if (!validate) {
      ajv ??= createAjv(t.openApi);
      validate = ajv.compile(closedSchema(schema));
      validators.set(key, validate);
    }
    if (validate(response.body)) return undefined;
    const errors = (validate.errors ?? [])
      .slice(0, 5)
      .map(
        (error) =>
          `${error.instancePath || '(root)'} ${error.message ?? ''}${
            error.keyword === 'additionalProperties'
              ? ` '${String((error.params as { additionalProperty: string }).additionalProperty)}'`
              : ''
          }`,
      )
      .join('; ');
    return `body does not match the documented ${response.status} schema: ${errors}`;
  }

  function errorBodyProblem(
    operation: Operation,
    response: request.Response,
    viaForm: boolean,
  ): string | undefined {
    const type = String(response.headers['content-type'] ?? '');
    if (operation.path.startsWith('/v1/mobile/')) {
      if (![400, 401].includes(response.status)) return 'a mobile route answered neither 400 nor 401';
      if (!type.startsWith('text/html') || response.text !== 'NO ROUTES')
        return 'mobile error is not NO ROUTES';
      return undefined;
    }
    if (!type.startsWith('application/json')) return 'error body is not JSON';
    const body = response.body as Record<string, unknown>;
    if (TOKEN_PATHS.has(operation.path) && viaForm) {
      const keys = Object.keys(body).sort().join();
      if (keys !== 'error,error_description') return `RFC 6749 error body has keys ${keys}`;
      if (typeof body.error !== 'string' || !/^[a-z_]+$/.test(body.error))
        return 'error is not an RFC 6749 error code';
      if (typeof body.error_description !== 'string' || !RFC6749_DESCRIPTION.test(body.error_description))
        return 'error_description is empty or has characters RFC 6749 does not allow';
      return undefined;
    }
    if (TOKEN_PATHS.has(operation.path)) {
      const keys = Object.keys(body).sort().join();
      if (
        typeof body.errorId !== 'string' ||
        body.code !== response.status ||
        typeof body.message !== 'string'
      )
        return 'token error body lacks errorId/code/message';
      if (keys !== (response.status === 400 ? 'code,detail,errorId,message' : 'code,errorId,message'))
        return `token error body has keys ${keys}`;
      return response.status === 400 ? itemsProblem(body.detail) : undefined;
    }
    const extra = Object.keys(body).filter((key) => !['name', 'message', 'detail'].includes(key));
    if (extra.length > 0) return `error body has extra keys ${extra.join()}`;
    if (typeof body.name !== 'string' || typeof body.message !== 'string')
      return 'error body lacks name/message';
    if (body.detail === undefined) return undefined;
    const detail = body.detail as Record<string, unknown>;
    if (typeof detail !== 'object' || detail === null || Array.isArray(detail))
      return 'detail is not an object';
    for (const [key, value] of Object.entries(detail)) {
      if (key === 'items') {
        const problem = itemsProblem(value);
        if (problem) return problem;
      } else if (key === 'item' || key === 'trackingId') {
        if (typeof value !== 'string') return `detail.${key} is not a string`;
      } else if (key === 'reason') {
        if (!FORBIDDEN_REASONS.has(String(value))) return `detail.reason ${String(value)} is not in the enum`;
      } else return `detail has the unknown key ${key}`;
    }
    if (response.status === 400 && !Array.isArray(detail.items)) return '400 without detail.items';
    return undefined;
  }

  function itemsProblem(items: unknown): string | undefined {
    if (!Array.isArray(items) || items.length === 0) return 'validation items are not a non-empty array';
    for (const item of items as Record<string, unknown>[]) {
      if (Object.keys(item).sort().join() !== 'message,path,type')
        return `item keys ${Object.keys(item).join()}`;
      if (typeof item.path !== 'string' || typeof item.message !== 'string')
        return 'item path/message not strings';
      if (!ERROR_ITEM_TYPES.has(String(item.type))) return `item type ${String(item.type)}`;
    }
    return undefined;
  }

  const counts = async (): Promise<Record<string, number>> =>
    Object.fromEntries(
      await Promise.all(
        MAIN_TABLES.map(async (table) => [table, await countRows(t.dataSource, table)] as const),
      ),
    );

  /** Runs a property, naming the seed to replay it on failure. */
  async function assertProperty(label: string, seed: number, property: fc.IAsyncProperty<[FuzzRequest]>) {
    try {
      await fc.assert(property, { seed, numRuns: RUNS, endOnFailure: !SHRINK });
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined;
      const message = `${error instanceof Error ? error.message : String(error)}${cause ? `\nGot: ${cause}` : ''}`;
      throw new Error(
        `${label} failed (replay: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}; property seed ${seed})\n${message}`,
        { cause: error },
      );
    }
  }

  // ---------- the suite ----------

  it('knows every operation of the document', () => {
    expect(operations.length).toBeGreaterThan(40);
    // Every {uuid} route maps to a real resource, every body type is generated (operationsOf throws otherwise).
    for (const operation of operations) {
      if (operation.path.includes('{uuid}')) expect(realIdFor(operation.path)).toMatch(UUID);
    }
  });

  it(
    'refused requests change nothing in the database',
    async () => {
      const before = await counts();
      let sent = 0;
      for (const [index, operation] of operations.entries()) {
        // A refusal is guaranteed by an invalid path id or by an unknown body property (a form's unknown
        // parameters are ignored, RFC 6749 §3.2: the token route's form stores nothing).
        const canRefuse = operation.pathParams.length > 0 || operation.body?.kind === 'json';
        if (!canRefuse) {
          // nothing else may be left out of this test
          expect(operation.method === 'get' || operation.form !== undefined).toBe(true);
          continue;
        }
        const arbitrary = fc
          .record({
            path: operation.pathParams.length > 0 ? pathArbitrary(operation) : fc.constant(operation.path),
            badId: invalidUuids,
            query: queryArbitrary(operation),
            body: bodyArbitrary(operation),
          })
          .map(({ path, badId, query, body }): FuzzRequest => {
            if (operation.body?.kind === 'json') {
              const parsed = body && 'json' in body ? safeParse(body.json) : undefined;
              const object = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
              return {
                url: `${path}${query}`,
                body: { json: JSON.stringify({ ...object, fuzzUnknownProperty: 1 }) },
              };
            }
            const url = operation.path.replace('{uuid}', encode(badId)).replace(/\{step\}/, 'SELFIE');
            return { url: `${url}${query}`, body };
          });
        await assertProperty(
          `refusal of ${operation.label}`,
          SEED + 1000 + index,
          fc.asyncProperty(arbitrary, async (fuzz) => {
            const response = await send(operation, fuzz);
            sent++;
            check(operation, response);
            if (response.status < 400) throw new Error(`not refused: ${describeResponse(response)}`);
          }),
        );
      }
      expect(sent).toBeGreaterThan(0);
      expect(await counts()).toEqual(before);
    },
    timeoutFor(120_000),
  );

  describe('mass assignment on create routes', () => {
    const serverOwned = ['balance', 'appId', 'status', 'uuid', 'id', 'createdAt', 'constructor', '__proto__'];

    it('refuses server-owned properties on every POST without path parameters', async () => {
      // A form's unknown parameters are ignored (RFC 6749 §3.2): the JSON bodies only.
      const creates = operations.filter(
        (operation) => operation.method === 'post' && operation.pathParams.length === 0 && !operation.form,
      );
      expect(creates.length).toBeGreaterThan(0);
      spareOwner = await createOwner(t.http, token, 'USER');
      for (const operation of creates) {
        const name = operation.body?.name;
        if (!name || !knownBodies[name])
          throw new Error(`${operation.label}: no valid base body for ${name ?? 'a body-less route'}`);
        const declared = Object.keys(resolve(operation.body!.schema).properties ?? {});
        const extras = serverOwned.filter((key) => !declared.includes(key));
        expect(extras.length).toBeGreaterThan(0);
        for (const key of extras) {
          const before = await counts();
          const value =
            key === 'balance'
              ? 1_000_000
              : key === 'createdAt'
                ? '2000-01-01T00:00:00Z'
                : key === 'status'
                  ? 'ACTIVE'
                  : key === '__proto__' || key === 'constructor'
                    ? { admin: true }
                    : randomUUID();
          const response = await send(operation, {
            url: operation.path,
            body: { json: JSON.stringify({ ...knownBodies[name](), [key]: value }) },
          });
          const label = `${operation.label} with ${key}`;
          expect({ label, status: response.status }).toEqual({ label, status: 400 });
          check(operation, response);
          if (operation.path.startsWith('/v1/mobile/')) {
            expect(response.text).toBe('NO ROUTES');
          } else {
            const items = (
              TOKEN_PATHS.has(operation.path) ? response.body.detail : response.body.detail.items
            ) as {
              path: string;
              type: string;
            }[];
            expect({ label, items }).toEqual({
              label,
              items: expect.arrayContaining([expect.objectContaining({ path: key, type: 'invalid' })]),
            });
          }
          expect(await counts()).toEqual(before);
        }
        // Control: the same body without the extra property is accepted.
        const control = await send(operation, {
          url: operation.path,
          body: { json: JSON.stringify(knownBodies[name]()) },
        });
        check(operation, control);
        const accepted = control.status < 300 && operation.documented.has(control.status);
        if (!accepted)
          throw new Error(`${operation.label}: the control was refused: ${describeResponse(control)}`);
      }
    }, 60_000);
  });

  describe('regressions found by the fuzzer', () => {
    const patchUser = (json: string) =>
      request(t.http)
        .patch(`/v1/users/${ids.users}`)
        .set('Authorization', bearer(token))
        .set('Content-Type', 'application/json')
        .send(json);

    it('refuses a lone surrogate with 400 (validator.js encodeURI threw: 500)', async () => {
      const response = await patchUser('{"email":"\\ud800@example.com"}');
      expect(response.status).toBe(400);
      expect(response.body.detail.items).toEqual([
        { path: '', message: 'strings must be well-formed Unicode', type: 'invalid' },
      ]);
    });

    it('takes an optional property sent as null for absent (a PATCH wrote the null into a NOT NULL column: 500)', async () => {
      const user = await createOwner(t.http, token, 'USER');
      const kyc = (json: string, method: 'post' | 'patch') => {
        const agent = request(t.http);
        const test =
          method === 'post'
            ? agent.post(`/v1/users/${user}/kyc-data`)
            : agent.patch(`/v1/users/${user}/kyc-data`);
        return test.set('Authorization', bearer(token)).set('Content-Type', 'application/json').send(json);
      };
      expect((await kyc('{"civilStatus":"SINGLE","isPep":false,"isSOAUIF":false}', 'post')).status).toBe(201);
      // FUZZ_SEED=380830122: the counterexample's body.
      const response = await kyc(
        '{"civilStatus":null,"isPep":true,"isSOAUIF":true,"isBlackListed":false}',
        'patch',
      );
      expect({ status: response.status, body: response.body as unknown }).toEqual({
        status: 200,
        body: expect.objectContaining({
          civilStatus: 'SINGLE',
          isPep: true,
          isSOAUIF: true,
          isBlackListed: false,
        }),
      });
    });

    it("refuses a NUL character in a document upload's fields with 400 (the multipart body skipped the JSON body's check: 500)", async () => {
      // FUZZ_SEED=317232985 FUZZ_RUNS=500: a document named "\u0000".
      const before = await counts();
      const response = await request(t.http)
        .post(`/v1/users/${ids.users}/documents`)
        .set('Authorization', bearer(token))
        .field('name', '\u0000')
        .field('documentType', 'DNI_FRONT')
        .attach('file', PNG, 'front.png');
      expect({ status: response.status, items: response.body.detail?.items }).toEqual({
        status: 400,
        items: [{ path: '', message: 'strings must not contain NUL characters', type: 'invalid' }],
      });
      expect(await counts()).toEqual(before);
    });

    it('refuses prototype keys at their path (they slipped past the whitelist)', async () => {
      for (const key of ['constructor', '__proto__', 'prototype']) {
        const response = await patchUser(`{"firstName":"Ana","${key}":{"admin":true}}`);
        expect({ key, status: response.status, items: response.body.detail?.items }).toEqual({
          key,
          status: 400,
          items: [{ path: key, message: `property ${key} is not allowed`, type: 'invalid' }],
        });
      }
    });
  });

  it(
    'answers every operation with a documented status and the interface error body',
    async () => {
      const failures: string[] = [];
      for (const [index, operation] of operations.entries()) {
        try {
          if (!operation.form) {
            await assertProperty(
              operation.label,
              SEED + index,
              fc.asyncProperty(requestArbitrary(operation), async (fuzz) =>
                check(operation, await send(operation, fuzz)),
              ),
            );
          } else {
            await assertProperty(
              `${operation.label} (form)`,
              SEED + 500 + index,
              fc.asyncProperty(requestArbitrary(operation, true), async (fuzz) =>
                check(operation, await send(operation, fuzz), true),
              ),
            );
          }
        } catch (error) {
          failures.push(error instanceof Error ? error.message : String(error));
        }
      }
      if (failures.length > 0)
        throw new Error(`${failures.length} operation(s) failed:\n\n${failures.join('\n\n')}`);
    },
    timeoutFor(180_000),
  );
});

/** encodeURIComponent, with lone surrogates (which it refuses) replaced by U+FFFD. */
function encode(value: string): string {
  return encodeURIComponent(
    value.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'),
  );
}

function safeParse(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

/** An Ajv that knows every component schema of the document, closed, as #/definitions/<name>. */
function createAjv(document: OpenAPIObject): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, formats: OPENAPI_FORMATS });
  const definitions = Object.fromEntries(
    Object.entries(document.components?.schemas ?? {}).map(([name, schema]) => [
      name,
      closedSchema(schema as Schema),
    ]),
  );
  ajv.addSchema({ $id: 'openapi', definitions });
  return ajv;
}

/**
 * The JSON Schema (draft-07) of an OpenAPI 3.0 schema: $ref to the components, nullable as a
 * null alternative, and every object that lists its properties closed (additionalProperties:
 * false unless the document says otherwise); free-form objects stay open.
 */
function closedSchema(schema: Schema): Record<string, unknown> {
  const { $ref, nullable, properties, items, allOf, oneOf, anyOf, additionalProperties, example, ...rest } =
    schema;
  void example;
  let result: Record<string, unknown>;
  if ($ref) {
    const name = $ref.replace('#/components/schemas/', '');
    result = { $ref: `openapi#/definitions/${name}` };
  } else {
    result = { ...rest };
    if (properties) {
      result.properties = Object.fromEntries(
        Object.entries(properties).map(([key, value]) => [key, closedSchema(value)]),
      );
      result.additionalProperties =
        additionalProperties === undefined
          ? false
          : typeof additionalProperties === 'boolean'
            ? additionalProperties
            : closedSchema(additionalProperties);
    } else if (additionalProperties !== undefined) {
      result.additionalProperties =
        typeof additionalProperties === 'boolean' ? additionalProperties : closedSchema(additionalProperties);
    }
    if (items) result.items = closedSchema(items);
    if (allOf) result.allOf = allOf.map(closedSchema);
    if (oneOf) result.oneOf = oneOf.map(closedSchema);
    if (anyOf) result.anyOf = anyOf.map(closedSchema);
    // `type: object` beside an allOf of a $ref (a nullable nested DTO) is implied by the reference.
    if (allOf && result.type === 'object' && !properties) delete result.type;
  }
  if (nullable) {
    if (Array.isArray(result.enum) && !result.enum.includes(null))
      result.enum = [...(result.enum as unknown[]), null];
    return { anyOf: [result, { type: 'null' }] };
  }
  return result;
}
