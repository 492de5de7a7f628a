import type { OpenAPIObject } from '@nestjs/swagger';
import request from 'supertest';
import { WebhooksService } from '../src/modules/webhooks/webhooks.service.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import { TRANSFER_STATUSES } from '../src/modules/transfers/transfer-status.js';
import { KYC_CIVIL_STATUSES } from '../src/modules/users/dto/user-kyc-data.dto.js';
import { ALIAS_PATTERN } from '../src/modules/wallet/alias.js';
import {
  accessToken,
  clientAssertion,
  registerClient,
  subjectToken,
  type TestClient,
} from './support/auth.js';
import { bearer, userBody } from './support/identity.js';
import { openApiAjv, serverPath } from './support/openapi.js';
import { startTestApp, TEST_BASE_URL, type TestApp } from './support/test-app.js';
import { openAccount } from './support/wallet.js';

/**
 * The OpenAPI document as front-end teams generate clients from it (docs/decisions/0069): the document the running
 * service serves at /v1/openapi.json, checked as a validator that follows OpenAPI 3.0 reads it (Ajv: `nullable`
 * widens only a `type` beside it), and real answers of the service checked against it.
 */

type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  nullable?: boolean;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  additionalProperties?: boolean | Schema;
};
interface Parameter {
  name: string;
  in: string;
  schema?: Schema;
}
interface Response {
  description: string;
  content?: Record<string, { schema: Schema }>;
  headers?: Record<string, { schema: Schema }>;
}
interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, Response>;
}
interface Op {
  method: string;
  /** The route as the service serves it (`/v1/users/{uuid}`). */
  path: string;
  label: string;
  operation: Operation;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];
const ref = (name: string) => `#/components/schemas/${name}`;
const nameOf = (schema: Schema | undefined) => schema?.$ref?.replace('#/components/schemas/', '');

/** The interface's routes with no credentials (the rest: OAuth2ClientCredentials, and BearerAuth on Either). */
const PUBLIC = [
  'GET /v1/health/live',
  'GET /v1/health/ready',
  'POST /v1/oauth/app/token',
  'POST /v1/oauth/token',
  'GET /v1/.well-known/jwks.json',
  'GET /v1/.well-known/oauth-authorization-server',
];

/** The body of each error status of the routes that answer the interface's ErrorResponse. */
const ERROR_SCHEMAS: Record<string, string> = {
  '400': 'ValidationErrorResponse',
  '401': 'UnauthorizedErrorResponse',
  '403': 'ForbiddenErrorResponse',
  '404': 'NotFoundErrorResponse',
  '413': 'PayloadTooLargeErrorResponse',
  '429': 'TooManyRequestsErrorResponse',
  '500': 'InternalErrorResponse',
  '503': 'ServiceUnavailableErrorResponse',
};

/** The interface's type names, each a component of the document. */
const INTERFACE_SCHEMAS = [
  'CreateUserRequest',
  'User',
  'UpdateUserRequest',
  'UserLegalInformation',
  'UserLegalInformationRequest',
  'LegalAddress',
  'Company',
  'TaxInformation',
  'CreateCompanyRequest',
  'UpdateKYCDataRequest',
  'CreateCompanyKYCDataRequest',
  'UserKYCData',
  'CreateUserKYCDataRequest',
  'Document',
  'UploadDocumentRequest',
  'AccountInfo',
  'CreateAccountRequest',
  'ModifyAccountRequest',
  'UpdateAccountAliasRequest',
  'BalanceResponse',
  'LimitsResponse',
  'SetLimitsRequest',
  'FeesResponse',
  'SetFeesRequest',
  'OperadoResponse',
  'FullOperadoResponse',
  'TransactionInfo',
  'TransactionInternalParty',
  'TransactionCounterParty',
  'CreateTransactionRequest',
  'CreateTransactionResponse',
  'AmountField',
  'CounterpartyRequest',
  'CounterpartyResponse',
  'SMSSendRequest',
  'SMSSendResponse',
  'SMSStatusResponse',
  'SMSStatusNotFoundResponse',
  'SimSwapRequest',
  'TransactionConcept',
  'CountryCode',
  'CurrencyCode',
  'AccountCXU',
  'AccountAlias',
];

/** Properties of the interface's shared string types: `Schema.property` → the component it must name. */
const SHARED_TYPED = {
  'CreateUserRequest.nationality': 'CountryCode',
  'UpdateUserRequest.nationality': 'CountryCode',
  'LegalAddress.country': 'CountryCode',
  'CreateCompanyRequest.operationCountry': 'CountryCode',
  'ModifyAccountRequest.nationality': 'CountryCode',
  'ModifyAccountRequest.alias': 'AccountAlias',
  'UpdateAccountAliasRequest.newAlias': 'AccountAlias',
  'AccountInfo.cvu': 'AccountCXU',
  'AccountInfo.alias': 'AccountAlias',
  'AccountInfo.currency': 'CurrencyCode',
  'TransactionInfo.currency': 'CurrencyCode',
  'TransactionInternalParty.cvu': 'AccountCXU',
  'TransactionCounterParty.identifier': 'AccountCXU',
  'CreateTransactionCounterParty.identifier': 'AccountCXU',
  'CreateTransactionResponse.currency': 'CurrencyCode',
  'AmountField.currency': 'CurrencyCode',
  'StatementResponse.currency': 'CurrencyCode',
  'ReversalsSummary.currency': 'CurrencyCode',
  'CounterpartyResponse.moneda': 'CurrencyCode',
};

/** Every schema object of a value, with where it is. */
function* schemasIn(value: unknown, where: string): Generator<[string, Schema]> {
  if (typeof value !== 'object' || value === null) return;
  if (!Array.isArray(value)) yield [where, value as Schema];
  for (const [key, child] of Object.entries(value)) yield* schemasIn(child, `${where}/${key}`);
}

describe('the OpenAPI document for generated clients (decision 0069)', () => {
  let t: TestApp;
  let document: OpenAPIObject;
  let ops: Op[];
  let client: TestClient;
  let token: string;
  let ajv: ReturnType<typeof openApiAjv>;

  const components = () => document.components!.schemas as Record<string, Schema>;
  /** The operation of a route as the service serves it (`/v1/users`): the document's path is relative to its server. */
  const operation = (method: string, route: string): Operation => {
    const path = route.slice(serverPath(document).length);
    const found = (document.paths[path] as Record<string, Operation> | undefined)?.[method];
    if (!found) throw new Error(`${method.toUpperCase()} ${route} is not in the document`);
    return found;
  };
  /** The component a property names (directly, or as the one member of an allOf beside a description). */
  const namedBy = (schema: Schema | undefined) => nameOf(schema) ?? nameOf(schema?.allOf?.[0]);

  /**
   * What is wrong with an answer as the operation documents it: its status, its content type, its body (JSON, or
   * the text of another type) against the documented schema, and the headers a client waits on.
   */
  function problemsOf(method: string, path: string, response: request.Response): string[] {
    const documented = operation(method, path).responses[String(response.status)];
    if (!documented) return [`status ${response.status} is not documented`];
    const problems: string[] = [];
    const type = String(response.headers['content-type'] ?? '').split(';')[0];
    if (response.text) {
      const media = documented.content?.[type];
      if (!media) problems.push(`${type} is not documented for ${response.status}`);
      else {
        const validate = ajv.compile(media.schema);
        if (!validate(type === 'application/json' ? response.body : response.text))
          problems.push(...(validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`));
      }
    }
    for (const header of ['retry-after', 'x-next-cursor']) {
      const declared = Object.keys(documented.headers ?? {}).map((name) => name.toLowerCase());
      if (response.headers[header] !== undefined && !declared.includes(header))
        problems.push(`the answer's ${header} header is not documented`);
    }
    return problems;
  }

  const expectDocumented = (method: string, path: string, response: request.Response) =>
    expect({ status: response.status, problems: problemsOf(method, path, response) }).toEqual({
      status: response.status,
      problems: [],
    });

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        DOCUMENT_UPLOADS_PER_OWNER_PER_DAY: '1',
        TOKEN_RATE_LIMIT_PER_MINUTE: '3',
        SMS_DESTINATION_LIMIT_PER_HOUR: '1',
      },
    });
    const served = await request(t.http).get('/v1/openapi.json');
    expect(served.status).toBe(200);
    document = served.body as OpenAPIObject;
    ajv = openApiAjv(document);
    ops = Object.entries(document.paths).flatMap(([relative, item]) =>
      METHODS.filter((method) => method in item).map((method) => {
        const path = `${serverPath(document)}${relative}`;
        return {
          method,
          path,
          label: `${method.toUpperCase()} ${path}`,
          operation: (item as Record<string, Operation>)[method],
        };
      }),
    );
    client = await registerClient(t.app, 'openapi-clients');
    token = await accessToken(t.http, client);
  });

  afterAll(() => t?.close());

  describe('the document', () => {
    it('is OpenAPI 3.0 whose every schema compiles, every nullable one as OpenAPI 3.0 reads it', () => {
      expect(document.openapi).toMatch(/^3\.0\.\d+$/);
      for (const name of Object.keys(components()))
        expect(() => ajv.compile({ $ref: ref(name) })).not.toThrow();
      const problems: string[] = [];
      for (const [where, schema] of schemasIn(document, '')) {
        if (schema.nullable !== true) continue;
        // `nullable` widens only the type beside it: a $ref, allOf, anyOf or oneOf next to it still refuses null.
        if (!schema.type || schema.$ref || schema.allOf || schema.anyOf || schema.oneOf)
          problems.push(`${where}: nullable without a type of its own`);
        if (schema.enum && !schema.enum.includes(null))
          problems.push(`${where}: a nullable enum without null`);
      }
      expect(problems).toEqual([]);
    });

    it('has {base_url} as its server and the interface paths relative to it', () => {
      expect(document.servers).toEqual([
        { url: TEST_BASE_URL.replace(/\/$/, ''), description: '{base_url}' },
      ]);
      expect(serverPath(document)).toBe('/v1');
      expect(Object.keys(document.paths).filter((path) => path.startsWith('/v1/'))).toEqual([]);
      for (const path of [
        '/oauth/app/token',
        '/users',
        '/users/{uuid}',
        '/wallet/accounts/{uuid}/fulloperado',
      ])
        expect(Object.keys(document.paths)).toContain(path);
    });

    it('types every parameter', () => {
      const untyped = ops.flatMap((op) =>
        (op.operation.parameters ?? [])
          .filter((parameter) => !parameter.schema?.type && !parameter.schema?.$ref)
          .map((parameter) => `${op.label} ${parameter.in} ${parameter.name}`),
      );
      expect(untyped).toEqual([]);
      const parameter = (method: string, path: string, name: string) =>
        operation(method, path).parameters?.find((candidate) => candidate.name === name)?.schema;
      expect(parameter('get', '/v1/users/all', 'limit')).toEqual({
        type: 'integer',
        minimum: 1,
        maximum: 500,
        default: 100,
      });
      expect(parameter('get', '/v1/users/all', 'cursor')).toEqual({ type: 'string', maxLength: 200 });
      expect(parameter('get', '/v1/wallet/transactions/all', 'status')).toEqual({
        $ref: ref('TransactionStatus'),
      });
      expect(parameter('get', '/v1/wallet/transactions/all', 'movementType')).toEqual({
        $ref: ref('MovementType'),
      });
      // Dates: a date or a UTC instant on the transfer lists; an RFC 3339 date-time on the statement and the audit.
      const transferDate = new RegExp(
        String(parameter('get', '/v1/wallet/transactions/all', 'from')?.pattern),
      );
      for (const value of ['2026-01-31', '2026-01-31T10:00Z', '2026-01-31T10:00:00.5Z'])
        expect(transferDate.test(value)).toBe(true);
      expect(transferDate.test('2026-01-31T10:00:00-03:00')).toBe(false);
      for (const [path, name] of [
        ['/v1/wallet/accounts/{uuid}/statement', 'from'],
        ['/v1/wallet/accounts/{uuid}/statement', 'to'],
        ['/v1/wallet/accounts/{uuid}/balance', 'at'],
        ['/v1/audit', 'from'],
        ['/v1/audit', 'to'],
      ])
        expect({ path, name, format: parameter('get', path, name)?.format }).toEqual({
          path,
          name,
          format: 'date-time',
        });
      expect(parameter('get', '/v1/events', 'type')).toEqual({ $ref: ref('EventType') });
      expect(parameter('post', '/v1/kyc/sessions/{uuid}/steps/{step}', 'step')).toEqual({
        $ref: ref('KycStep'),
      });
      for (const path of [
        '/v1/wallet/transactions',
        '/v1/wallet/transactions/{uuid}/reversals',
        '/v1/mobile/sms',
      ]) {
        const key = parameter('post', path, 'Idempotency-Key')!;
        expect(key).toMatchObject({ type: 'string', minLength: 1, maxLength: 255 });
        const pattern = new RegExp(String(key.pattern));
        expect([pattern.test('order-1:retry'), pattern.test('niño'), pattern.test('a b')]).toEqual([
          true,
          false,
          false,
        ]);
      }
    });

    it('declares the security of every operation, public ones as none, with the rules of each scheme', () => {
      const schemes = document.components!.securitySchemes as Record<string, { description?: string }>;
      expect(Object.keys(schemes).sort()).toEqual(['BearerAuth', 'OAuth2ClientCredentials']);
      expect(ops.filter((op) => !Array.isArray(op.operation.security)).map((op) => op.label)).toEqual([]);
      expect(ops.filter((op) => op.operation.security!.length === 0).map((op) => op.label)).toEqual(
        expect.arrayContaining(PUBLIC),
      );
      expect(ops.filter((op) => op.operation.security!.length === 0)).toHaveLength(PUBLIC.length);
      const used = new Set(
        ops.flatMap((op) => op.operation.security!.flatMap((entry) => Object.keys(entry))),
      );
      expect([...used].sort()).toEqual(Object.keys(schemes).sort());
      expect(schemes.OAuth2ClientCredentials.description).toEqual(expect.stringContaining('private_key_jwt'));
      for (const rule of [
        'ES256',
        '`kid`',
        '`iss` = the application id',
        '`sub` = the',
        '`aud` = `{base_url}`',
        '3600',
      ])
        expect(schemes.BearerAuth.description).toEqual(expect.stringContaining(rule));
    });

    it('names schemas and operations as the interface does, with its spellings', () => {
      expect(INTERFACE_SCHEMAS.filter((name) => !(name in components()))).toEqual([]);
      expect(Object.keys(components()).filter((name) => /Dto$/.test(name))).toEqual([]);
      const ok = (method: string, path: string, status = '200') =>
        nameOf(operation(method, path).responses[status].content?.['application/json'].schema);
      expect(ok('post', '/v1/users', '201')).toBe('User');
      expect(ok('get', '/v1/wallet/accounts/{uuid}/operado')).toBe('OperadoResponse');
      expect(ok('get', '/v1/wallet/accounts/{uuid}/fulloperado')).toBe('FullOperadoResponse');
      expect(Object.keys(components().Company.properties!)).toContain('taxInfomation');
      expect(components().KycSteepUpdateEvent.properties!.event.enum).toEqual(['kyc_steep_update']);
      expect(Object.keys(components().KycSteepUpdateData.properties!)).toContain('steep');

      const ids = ops.map((op) => op.operation.operationId ?? `(none: ${op.label})`);
      expect(ids.filter((id) => !/^[a-z][A-Za-z]+$/.test(id) || /Controller/.test(id))).toEqual([]);
      expect(new Set(ids).size).toBe(ids.length);
      expect({
        createUser: operation('post', '/v1/users').operationId,
        listUsers: operation('get', '/v1/users/all').operationId,
        getAccountBalance: operation('get', '/v1/wallet/accounts/{uuid}/balance').operationId,
        createTransaction: operation('post', '/v1/wallet/transactions').operationId,
        issueToken: operation('post', '/v1/oauth/app/token').operationId,
      }).toEqual({
        createUser: 'createUser',
        listUsers: 'listUsers',
        getAccountBalance: 'getAccountBalance',
        createTransaction: 'createTransaction',
        issueToken: 'issueToken',
      });
    });

    it('defines each enum once, as a component, and the shared string types as the interface does', () => {
      const inline = new Map<string, string[]>();
      for (const [where, schema] of schemasIn(document, '')) {
        if (!Array.isArray(schema.enum) || schema.enum.filter((value) => value !== null).length < 2) continue;
        if (where.startsWith('/components/schemas/') && where.split('/').length === 4) continue; // a component
        const key = JSON.stringify(schema.enum);
        inline.set(key, [...(inline.get(key) ?? []), where]);
      }
      expect([...inline.entries()].filter(([, places]) => places.length > 1)).toEqual([]);
      const values = (name: string) => components()[name]?.enum;
      expect(values('TransactionConcept')).toHaveLength(17);
      expect(values('TransactionStatus')).toEqual([...TRANSFER_STATUSES]);
      expect(values('MovementType')).toEqual(['DEPOSIT', 'WITHDRAW']);
      expect(values('OwnerType')).toEqual(['USER', 'COMPANY']);
      expect(values('KycCivilStatus')).toEqual([...KYC_CIVIL_STATUSES]);

      expect(
        Object.fromEntries(
          Object.keys(SHARED_TYPED).map((key) => {
            const [schema, property] = key.split('.');
            return [key, namedBy(components()[schema]?.properties?.[property])];
          }),
        ),
      ).toEqual(SHARED_TYPED);
      expect(components().CountryCode).toMatchObject({ type: 'string', pattern: '^[A-Z]{2}$' });
      expect(components().CurrencyCode).toMatchObject({ type: 'string', pattern: '^[A-Z]{3}$' });
      expect(components().AccountCXU).toMatchObject({ type: 'string', pattern: '^[0-9]{22}$' });
      expect(components().AccountAlias).toMatchObject({ type: 'string', pattern: ALIAS_PATTERN.source });
    });

    it('gives each error status its own body, and every operation its 500 and 503 with Retry-After', () => {
      const problems: string[] = [];
      for (const op of ops) {
        for (const [status, response] of Object.entries(op.operation.responses)) {
          if (Number(status) < 400) continue;
          const json = response.content?.['application/json']?.schema;
          const expected = op.path.startsWith('/v1/mobile/')
            ? Number(status) < 500
              ? undefined
              : ERROR_SCHEMAS[status]
            : op.path === '/v1/oauth/app/token' && Number(status) < 500
              ? status === '400'
                ? 'TokenValidationError'
                : 'TokenError'
              : op.path === '/v1/oauth/token' && Number(status) < 500
                ? 'OAuthError'
                : ERROR_SCHEMAS[status];
          if (nameOf(json) !== expected) problems.push(`${op.label} ${status}: ${nameOf(json) ?? 'no $ref'}`);
          if (expected === undefined && response.content?.['text/html']?.schema.type !== 'string')
            problems.push(`${op.label} ${status}: not the text NO ROUTES`);
          const waits =
            ['429', '503'].includes(status) ||
            (['POST /v1/mobile/sms', 'POST /v1/mobile/simSwap'].includes(op.label) && status === '400');
          const retryAfter = response.headers?.['Retry-After']?.schema;
          if (waits && retryAfter?.type !== 'integer') problems.push(`${op.label} ${status}: no Retry-After`);
        }
        for (const status of ['500', '503'])
          if (!op.operation.responses[status]) problems.push(`${op.label}: no ${status}`);
      }
      expect(problems).toEqual([]);
    });

    it('documents each token route with one body and one answer, the lifetimes as integers', () => {
      const appToken = operation('post', '/v1/oauth/app/token');
      const oauthToken = operation('post', '/v1/oauth/token');
      expect(Object.keys(appToken.requestBody!.content)).toEqual(['application/json']);
      expect(Object.keys(oauthToken.requestBody!.content)).toEqual(['application/x-www-form-urlencoded']);
      expect(nameOf(appToken.responses['200'].content!['application/json'].schema)).toBe('TokenResponse');
      expect(nameOf(oauthToken.responses['200'].content!['application/json'].schema)).toBe(
        'OAuthTokenResponse',
      );
      expect(components().TokenResponse.properties!.expiresIn.type).toBe('integer');
      expect(components().OAuthTokenResponse.properties!.expires_in.type).toBe('integer');
      expect(components().EventDelivery.properties!.attempts.type).toBe('integer');
    });

    it('types the events feed: one schema per event, told apart by `event`, timestamps as integers', () => {
      const events = {
        oneOf: ['TransferUpdateEvent', 'KycSteepUpdateEvent', 'WebhookTestEvent'].map((name) => ({
          $ref: ref(name),
        })),
        discriminator: {
          propertyName: 'event',
          mapping: {
            transfer_update: ref('TransferUpdateEvent'),
            kyc_steep_update: ref('KycSteepUpdateEvent'),
            webhook_test: ref('WebhookTestEvent'),
          },
        },
      };
      expect(operation('get', '/v1/events').responses['200'].content!['application/json'].schema).toEqual({
        type: 'array',
        items: events,
      });
      expect(
        operation('get', '/v1/events/{uuid}').responses['200'].content!['application/json'].schema,
      ).toEqual(events);
      expect(Object.keys(components().TransferUpdateData.properties!).sort()).toEqual(
        ['backStatus', 'movementType', 'newStatus', 'uuid'].sort(),
      );
      expect(Object.keys(components().KycSteepUpdateData.properties!).sort()).toEqual(
        ['backStatus', 'newStatus', 'session', 'steep'].sort(),
      );
      expect(components().TransferUpdateEvent.properties!.timestamp.type).toBe('integer');
    });

    it("documents the statement's CSV as text and a KYC history entry's values as open objects", () => {
      const statement = operation('get', '/v1/wallet/accounts/{uuid}/statement');
      expect(statement.responses['200'].content!['text/csv'].schema).toMatchObject({ type: 'string' });
      for (const [status, response] of Object.entries(statement.responses))
        if (status !== '200') expect({ status, csv: response.content?.['text/csv'] }).toEqual({ status });
      const entry = components().KycHistoryEntry.properties!;
      expect([entry.previous.additionalProperties, entry.current.additionalProperties]).toEqual([true, true]);
    });
  });

  describe('real answers against the document', () => {
    it('a user without an account (account null), created, read and listed', async () => {
      const created = await request(t.http)
        .post('/v1/users')
        .set('Authorization', bearer(token))
        .send(userBody());
      expect(created.body).toMatchObject({ account: null });
      expectDocumented('post', '/v1/users', created);
      const uuid = (created.body as { uuid: string }).uuid;
      expectDocumented(
        'get',
        '/v1/users/{uuid}',
        await request(t.http).get(`/v1/users/${uuid}`).set('Authorization', bearer(token)),
      );
      expectDocumented(
        'get',
        '/v1/users/all',
        await request(t.http).get('/v1/users/all').set('Authorization', bearer(token)),
      );
    });

    it("a user's KYC data before it is given (civilStatus null)", async () => {
      const user = await request(t.http)
        .post('/v1/users')
        .set('Authorization', bearer(token))
        .send(userBody());
      const kyc = await request(t.http)
        .get(`/v1/users/${(user.body as { uuid: string }).uuid}/kyc-data`)
        .set('Authorization', bearer(token));
      expect(kyc.body).toMatchObject({ civilStatus: null });
      expectDocumented('get', '/v1/users/{uuid}/kyc-data', kyc);
    });

    it('a statement as CSV and as JSON', async () => {
      const user = await request(t.http)
        .post('/v1/users')
        .set('Authorization', bearer(token))
        .send(userBody());
      const account = await openAccount(t.http, token, client.appId, (user.body as { uuid: string }).uuid);
      const csv = await request(t.http)
        .get(`/v1/wallet/accounts/${account.uuid}/statement`)
        .set('Authorization', bearer(token))
        .set('Accept', 'text/csv');
      expect(csv.headers['content-type']).toMatch(/^text\/csv/);
      expectDocumented('get', '/v1/wallet/accounts/{uuid}/statement', csv);
      const json = await request(t.http)
        .get(`/v1/wallet/accounts/${account.uuid}/statement`)
        .set('Authorization', bearer(token));
      expectDocumented('get', '/v1/wallet/accounts/{uuid}/statement', json);
    });

    it('an event of the feed (webhook_test), whose schema refuses data of another event', async () => {
      const { eventId } = await t.app.get(WebhooksService).sendTest(client.appId, cliActor('test'));
      const event = await request(t.http).get(`/v1/events/${eventId}`).set('Authorization', bearer(token));
      expect(event.status).toBe(200);
      expectDocumented('get', '/v1/events/{uuid}', event);
      const validate = ajv.compile(
        operation('get', '/v1/events/{uuid}').responses['200'].content!['application/json'].schema,
      );
      const kycData = { session: eventId, steep: 'SELFIE', backStatus: 'PENDING', newStatus: 'SUCCESS' };
      expect(validate({ ...(event.body as object), data: kycData })).toBe(false);
      expect(validate({ ...(event.body as object), event: 'kyc_steep_update', data: kycData })).toBe(true);
    });

    it('400, 401, 403, 404 and 429 each answer the body of their own schema, which refuses the others', async () => {
      const user = await request(t.http)
        .post('/v1/users')
        .set('Authorization', bearer(token))
        .send(userBody());
      const uuid = (user.body as { uuid: string }).uuid;
      const own = bearer(await subjectToken(client, uuid));
      const png = Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
        'base64',
      );
      const upload = () =>
        request(t.http)
          .post(`/v1/users/${uuid}/documents`)
          .set('Authorization', bearer(token))
          .field('documentType', 'DNI_FRONT')
          .attach('file', png, 'front.png');
      expect((await upload()).status).toBe(201);
      const answers = {
        '400': [
          'post',
          '/v1/users',
          await request(t.http).post('/v1/users').set('Authorization', bearer(token)).send({}),
        ],
        '401': ['get', '/v1/users/all', await request(t.http).get('/v1/users/all')],
        '403': [
          'patch',
          '/v1/users/{uuid}',
          await request(t.http)
            .patch(`/v1/users/${uuid}`)
            .set('Authorization', own)
            .send({ firstName: 'Otro' }),
        ],
        '404': [
          'get',
          '/v1/users/{uuid}',
          await request(t.http)
            .get('/v1/users/00000000-0000-4000-8000-000000000000')
            .set('Authorization', bearer(token)),
        ],
        '429': ['post', '/v1/users/{uuid}/documents', await upload()],
      } as const;
      for (const [status, [method, path, response]] of Object.entries(answers)) {
        expect(response.status).toBe(Number(status));
        expectDocumented(method, path, response);
      }
      expect(answers['429'][2].headers['retry-after']).toMatch(/^\d+$/);
      // A client can count on its status's detail: each schema refuses the bodies of the other statuses.
      const accepted = Object.entries(answers).flatMap(([status, [method, path]]) => {
        const validate = ajv.compile(
          operation(method, path).responses[status].content!['application/json'].schema,
        );
        return Object.entries(answers)
          .filter(([other]) => other !== status && validate(answers[other as keyof typeof answers][2].body))
          .map(([other]) => `the ${status} schema accepts the ${other} body`);
      });
      expect(accepted).toEqual([]);
    });

    it('the token routes: their errors, and a 429 with Retry-After', async () => {
      // TOKEN_RATE_LIMIT_PER_MINUTE is 3: the set-up's token was the first.
      const json = await request(t.http)
        .post('/v1/oauth/app/token')
        .send({ grantType: 'client_credentials' });
      expect(json.status).toBe(400);
      expectDocumented('post', '/v1/oauth/app/token', json);
      const form = await request(t.http)
        .post('/v1/oauth/token')
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: client.appId, client_assertion: 'not-a-jwt' });
      expect([400, 401]).toContain(form.status);
      expectDocumented('post', '/v1/oauth/token', form);
      const limited = await request(t.http)
        .post('/v1/oauth/app/token')
        .send({ appId: client.appId, token: await clientAssertion(client), grantType: 'client_credentials' });
      expect(limited.status).toBe(429);
      expect(limited.headers['retry-after']).toMatch(/^\d+$/);
      expectDocumented('post', '/v1/oauth/app/token', limited);
    });

    it('a rate-limited SMS: 400 NO ROUTES with Retry-After', async () => {
      const send = () =>
        request(t.http)
          .post('/v1/mobile/sms')
          .set('Authorization', bearer(token))
          .send({ dnis: '541155550101', message: 'code 1234' });
      expect((await send()).status).toBe(200);
      const refused = await send();
      expect([refused.status, refused.text]).toEqual([400, 'NO ROUTES']);
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      expectDocumented('post', '/v1/mobile/sms', refused);
    });
  });
});
