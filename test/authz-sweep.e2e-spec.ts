import { createHmac, randomUUID, type KeyObject } from 'node:crypto';
import type { OpenAPIObject } from '@nestjs/swagger';
import { SignJWT, type JWTPayload } from 'jose';
import request from 'supertest';
import { SigningKeysService } from '../src/modules/auth/signing-keys.service.js';
import { WebhooksService } from '../src/modules/webhooks/webhooks.service.js';
import {
  accessToken,
  clientAssertion,
  registerClient,
  subjectToken,
  unsignedJwt,
  type TestClient,
} from './support/auth.js';
import { bearer } from './support/identity.js';
import { DIRECTORY, transferBody } from './support/transfers.js';
import { createOwner, openAccount, setBalance } from './support/wallet.js';
import { startTestApp, TEST_BASE_URL, type TestApp } from './support/test-app.js';
import { freshKeyPair } from './support/keys.js';
import { serverPath } from './support/openapi.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';

/**
 * Suite 4 (issue 9): the authorization sweep. Every case is derived from the
 * OpenAPI document of the real application, so a new route is attacked
 * without anyone listing it here. Only the two literal lists below (the
 * scheme snapshot and the public set) name routes: changing who may call what
 * must show up as a diff of this file.
 */

type PathItem = OpenAPIObject['paths'][string];
type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch' | 'options' | 'head' | 'trace';
type Operation = NonNullable<PathItem[HttpMethod]>;
type Schema = Record<string, unknown>;

const HTTP_METHODS: readonly HttpMethod[] = [
  'get',
  'put',
  'post',
  'delete',
  'patch',
  'options',
  'head',
  'trace',
];
const CC_SCHEME = 'OAuth2ClientCredentials';
const ELSEWHERE = 'https://elsewhere.example/v1/';
/** The smallest valid PNG: a multipart upload must carry a real file to pass the parser. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
/** Interface error rule 5: the SMS and SIM swap routes answer 400/401 as text/html `NO ROUTES`. */
const NO_ROUTES_PREFIX = '/v1/mobile/';
/** GET /v1/mobile/sms/{uuid} answers another owner's message as never sent (200 UNKNOWN), not 404. */
const SMS_STATUS_PREFIX = '/v1/mobile/sms/';
const CONCURRENCY = 8;

interface Op {
  /** `METHOD /path/{param}` as in the document. */
  readonly name: string;
  readonly method: HttpMethod;
  readonly path: string;
  readonly operation: Operation;
  readonly schemes: string[];
}

interface Outcome {
  status: number;
  type: string;
  text: string;
  body: unknown;
}

/** Every operation of the document, in document order, its path with the server's before it (`/v1/users`). */
function operationsOf(document: OpenAPIObject): Op[] {
  const ops: Op[] = [];
  const base = serverPath(document);
  for (const [relative, item] of Object.entries(document.paths)) {
    const path = `${base}${relative}`;
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const schemes = [
        ...new Set((operation.security ?? document.security ?? []).flatMap(Object.keys)),
      ].sort();
      ops.push({ name: `${method.toUpperCase()} ${path}`, method, path, operation, schemes });
    }
  }
  return ops;
}

function resolve(document: OpenAPIObject, schema: unknown): Schema {
  let current = schema as Schema;
  for (let depth = 0; typeof current.$ref === 'string'; depth++) {
    if (depth > 20) throw new Error(`unresolvable $ref ${String(current.$ref)}`);
    const name = current.$ref.replace('#/components/schemas/', '');
    const target = document.components?.schemas?.[name];
    if (!target) throw new Error(`unknown schema ${current.$ref}`);
    current = target as Schema;
  }
  return current;
}

const STRING_CANDIDATES = ['sweep.alias.01', 'sweep', 'AR', 'a'];

/** A minimal valid value of a schema: required properties only, examples and enums first. */
function sample(document: OpenAPIObject, raw: unknown, where: string): unknown {
  const schema = resolve(document, raw);
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0] as unknown;
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1)
    return sample(document, schema.allOf[0], where);
  switch (schema.type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, unknown>;
      const required = (schema.required ?? []) as string[];
      return Object.fromEntries(
        required.map((key) => [key, sample(document, properties[key], `${where}.${key}`)]),
      );
    }
    case 'array':
      return [];
    case 'boolean':
      return false;
    case 'number':
    case 'integer':
      return 1000;
    case 'string': {
      if (schema.format === 'uuid') return randomUUID();
      if (schema.format === 'email') return 'sweep@example.com';
      if (schema.format === 'date') return '1990-01-01';
      if (schema.format === 'date-time') return new Date().toISOString();
      if (typeof schema.pattern !== 'string') return 'sweep';
      const pattern = new RegExp(schema.pattern);
      const value = STRING_CANDIDATES.find((candidate) => pattern.test(candidate));
      if (value === undefined) throw new Error(`${where}: no sample matches the pattern ${schema.pattern}`);
      return value;
    }
    default:
      throw new Error(`${where}: cannot build a value for the schema ${JSON.stringify(schema)}`);
  }
}

interface BodyPlan {
  kind: 'none' | 'json' | 'multipart';
  /** The attack body: `{}` for JSON (validation must not run before authentication). */
  attack?: Record<string, unknown>;
  /** A valid body, so that a refusal of the tenancy cases cannot be a validation 400. */
  valid?: Record<string, unknown>;
  files?: string[];
}

function bodyPlan(document: OpenAPIObject, op: Op): BodyPlan {
  const content = (op.operation.requestBody as { content?: Record<string, { schema?: unknown }> } | undefined)
    ?.content;
  if (!content)
    return ['post', 'put', 'patch'].includes(op.method)
      ? { kind: 'json', attack: {}, valid: {} }
      : { kind: 'none' };
  const multipart = content['multipart/form-data'];
  if (multipart?.schema) {
    const schema = resolve(document, multipart.schema);
    const properties = (schema.properties ?? {}) as Record<string, unknown>;
    const files = Object.keys(properties).filter(
      (key) => resolve(document, properties[key]).format === 'binary',
    );
    const fields = sample(
      document,
      { ...schema, required: ((schema.required ?? []) as string[]).filter((key) => !files.includes(key)) },
      op.name,
    ) as Record<string, unknown>;
    return { kind: 'multipart', attack: fields, valid: fields, files };
  }
  const json = content['application/json'];
  if (!json?.schema)
    throw new Error(
      `${op.name}: request body of an unknown content type (${Object.keys(content).join(', ')})`,
    );
  return {
    kind: 'json',
    attack: {},
    valid: sample(document, json.schema, op.name) as Record<string, unknown>,
  };
}

const pathParameters = (op: Op): { name: string; schema: Schema }[] =>
  (op.operation.parameters ?? [])
    .map((parameter) => parameter as { in?: string; name: string; schema?: Schema })
    .filter((parameter) => parameter.in === 'path')
    .map((parameter) => ({ name: parameter.name, schema: parameter.schema ?? {} }));

/** Replaces every `{param}` of the path; a placeholder without a value is an error naming the operation. */
function fill(op: Op, value: (name: string, schema: Schema) => string): string {
  const parameters = pathParameters(op);
  const path = op.path.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const parameter = parameters.find((candidate) => candidate.name === name);
    if (!parameter) throw new Error(`${op.name}: path placeholder {${name}} is not a documented parameter`);
    return encodeURIComponent(value(name, parameter.schema));
  });
  return path;
}

async function pool<T, R>(items: readonly T[], worker: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await worker(items[index]);
    }
  });
  await Promise.all(lanes);
  return results;
}

const describeOutcome = (outcome: Outcome): string =>
  `${outcome.status} ${outcome.type} ${outcome.text.slice(0, 200)}`;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const hasExactKeys = (value: unknown, keys: string[]): value is Record<string, unknown> =>
  isRecord(value) && JSON.stringify(Object.keys(value).sort()) === JSON.stringify([...keys].sort());

/** 401 as the route's error style says; undefined when right, else what was wrong. */
function unauthorizedProblem(op: Op, outcome: Outcome): string | undefined {
  if (op.path.startsWith(NO_ROUTES_PREFIX)) {
    const ok = outcome.status === 401 && /^text\/html/.test(outcome.type) && outcome.text === 'NO ROUTES';
    return ok ? undefined : `expected 401 text/html NO ROUTES, got ${describeOutcome(outcome)}`;
  }
  const body = outcome.body;
  const ok =
    outcome.status === 401 &&
    /^application\/json/.test(outcome.type) &&
    hasExactKeys(body, ['name', 'message']) &&
    body.name === 'UnauthorizedError' &&
    typeof body.message === 'string';
  return ok ? undefined : `expected 401 {name: UnauthorizedError, message}, got ${describeOutcome(outcome)}`;
}

function notFoundProblem(op: Op, outcome: Outcome): string | undefined {
  if (op.path.startsWith(SMS_STATUS_PREFIX) && op.method === 'get') {
    const ok =
      outcome.status === 200 &&
      hasExactKeys(outcome.body, ['status', 'delivery_time', 'mccmnc']) &&
      outcome.body.status === 'UNKNOWN' &&
      outcome.body.delivery_time === '' &&
      outcome.body.mccmnc === '';
    return ok
      ? undefined
      : `expected 200 {status: UNKNOWN, delivery_time: '', mccmnc: ''}, got ${describeOutcome(outcome)}`;
  }
  const body = outcome.body;
  const ok =
    outcome.status === 404 &&
    /^application\/json/.test(outcome.type) &&
    hasExactKeys(body, ['name', 'message', 'detail']) &&
    body.name === 'NotFoundError' &&
    typeof body.message === 'string' &&
    hasExactKeys(body.detail, ['item']) &&
    typeof body.detail.item === 'string';
  return ok
    ? undefined
    : `expected 404 {name: NotFoundError, message, detail: {item}}, got ${describeOutcome(outcome)}`;
}

interface Attack {
  name: string;
  /** The Authorization header, or undefined for none. */
  authorization: () => string | undefined;
}

describe('authorization sweep generated from the OpenAPI document', () => {
  let t: TestApp;
  let document: OpenAPIObject;
  let ops: Op[];
  let appA: TestClient;
  let appB: TestClient;
  let tokenA: string;
  let tokenB: string;
  let userA1: string;
  let userA2: string;
  let companyA: string;
  let serviceKid: string;
  let servicePublicPem: string;
  /** A key of nobody's: the service never published it. */
  let strangerKey: KeyObject;
  const tokens = new Map<string, string>();
  /** Operation → the attacks it was exercised with (checked at the end: nothing skipped). */
  const attacked = new Map<string, Set<string>>();
  /** Path prefix → a real resource of app A and the subject that owns it. */
  let resources: { prefix: string; uuid: string; owner: string }[];

  const secured = () => ops.filter((op) => op.schemes.length > 0);
  const ccOnly = () => secured().filter((op) => op.schemes.length === 1 && op.schemes[0] === CC_SCHEME);
  const withPathParameters = () => secured().filter((op) => pathParameters(op).length > 0);

  async function call(
    op: Op,
    path: string,
    authorization: string | undefined,
    body: 'attack' | 'valid',
  ): Promise<Outcome> {
    const plan = bodyPlan(document, op);
    let test = request(t.http)[op.method as 'get' | 'put' | 'post' | 'delete' | 'patch'](path);
    if (authorization !== undefined) test = test.set('Authorization', authorization);
    if (plan.kind === 'json') test = test.send(plan[body] ?? {});
    if (plan.kind === 'multipart') {
      for (const [key, value] of Object.entries(plan[body] ?? {})) test = test.field(key, String(value));
      for (const file of plan.files ?? []) test = test.attach(file, PNG, 'sweep.png');
    }
    const response = await test;
    return {
      status: response.status,
      type: String(response.headers['content-type'] ?? ''),
      text: response.text ?? '',
      body: response.body as unknown,
    };
  }

  /** The resource of app A for an operation's path (longest prefix); throws naming the operation. */
  function resourceFor(op: Op): { uuid: string; owner: string } {
    const match = resources
      .filter((resource) => op.path.startsWith(resource.prefix))
      .sort((a, b) => b.prefix.length - a.prefix.length)[0];
    if (!match)
      throw new Error(`${op.name}: no resource of app A is mapped to this path; add its prefix to the sweep`);
    return match;
  }

  /** The path with the resource uuid for `{uuid}` and a valid value for every other parameter. */
  function resourcePath(op: Op): string {
    const resource = resourceFor(op);
    return fill(op, (name, raw) => {
      if (name === 'uuid') return resource.uuid;
      const schema = resolve(document, raw);
      const value = Array.isArray(schema.enum) && schema.enum.length ? schema.enum[0] : undefined;
      if (typeof value !== 'string') throw new Error(`${op.name}: no value for the path parameter {${name}}`);
      return value;
    });
  }

  /** Runs `check` on every operation; returns one line per failure, naming the operation. */
  async function sweep(selected: Op[], run: (op: Op) => Promise<string | undefined>): Promise<string[]> {
    const failures = await pool(selected, async (op) => {
      try {
        const problem = await run(op);
        return problem ? `${op.name}: ${problem}` : undefined;
      } catch (error) {
        return `${op.name}: could not be exercised: ${(error as Error).message}`;
      }
    });
    return failures.filter((failure): failure is string => failure !== undefined);
  }

  beforeAll(async () => {
    t = await startTestApp({ runWorker: false });
    document = t.openApi;
    ops = operationsOf(document);

    appA = await registerClient(t.app, 'sweep-a');
    appB = await registerClient(t.app, 'sweep-b');
    tokenA = await accessToken(t.http, appA);
    tokenB = await accessToken(t.http, appB);

    const signing = t.app.get(SigningKeysService);
    const current = await signing.current();
    serviceKid = current.kid;
    const servicePublic = await signing.publicKey(serviceKid);
    if (!servicePublic) throw new Error('the current signing key is not published');
    servicePublicPem = servicePublic.export({ type: 'spki', format: 'pem' }) as string;
    strangerKey = freshKeyPair().privateKey;

    userA1 = await createOwner(t.http, tokenA, 'USER');
    userA2 = await createOwner(t.http, tokenA, 'USER');
    companyA = await createOwner(t.http, tokenA, 'COMPANY');
    const account = await openAccount(t.http, tokenA, appA.appId, userA1);
    const user1Token = bearer(await subjectToken(appA, userA1));

    const document1 = await request(t.http)
      .post(`/v1/users/${userA1}/documents`)
      .set('Authorization', bearer(tokenA))
      .field('documentType', 'DNI_FRONT')
      .attach('file', PNG, 'front.png');
    if (document1.status !== 201)
      throw new Error(`document upload failed: ${document1.status} ${document1.text}`);
    const session = await request(t.http)
      .post('/v1/kyc/sessions')
      .set('Authorization', bearer(tokenA))
      .send({ ownerType: 'USER', ownerId: userA1 });
    if (session.status !== 201) throw new Error(`KYC session failed: ${session.status} ${session.text}`);
    const sms = await request(t.http)
      .post('/v1/mobile/sms')
      .set('Authorization', user1Token)
      .send({ dnis: '541123456789', message: 'Hola' });
    if (sms.status !== 200) throw new Error(`SMS failed: ${sms.status} ${sms.text}`);
    // A real transfer of account (external, stays INICIADO without the worker) for /v1/wallet/transactions/{uuid}.
    await setBalance(t.http, tokenA, account.uuid, 100);
    const transfer = await request(t.http)
      .post('/v1/wallet/transactions')
      .set('Authorization', bearer(tokenA))
      .send(transferBody(account.uuid, DIRECTORY.nacion.number, 10));
    if (transfer.status !== 201) throw new Error(`transfer failed: ${transfer.status} ${transfer.text}`);

    // An event of app A (a webhook_test; no worker runs, it stays pending) for /v1/events/{uuid}.
    const { eventId } = await t.app.get(WebhooksService).sendTest(appA.appId, cliActor('test'));

    resources = [
      { prefix: '/v1/users/{uuid}', uuid: userA1, owner: userA1 },
      { prefix: '/v1/events/{uuid}', uuid: eventId, owner: userA1 },
      { prefix: '/v1/companies/{uuid}', uuid: companyA, owner: companyA },
      { prefix: '/v1/wallet/accounts/{uuid}', uuid: account.uuid, owner: userA1 },
      {
        prefix: '/v1/wallet/transactions/{uuid}',
        uuid: (transfer.body as { uuid: string }).uuid,
        owner: userA1,
      },
      { prefix: '/v1/documents/{uuid}', uuid: (document1.body as { uuid: string }).uuid, owner: userA1 },
      { prefix: '/v1/kyc/sessions/{uuid}', uuid: (session.body as { uuid: string }).uuid, owner: userA1 },
      {
        prefix: '/v1/mobile/sms/{uuid}',
        uuid: (sms.body as { message_id: string }).message_id,
        owner: userA1,
      },
    ];

    const now = Math.floor(Date.now() / 1000);
    const userClaims = { iss: appA.appId, sub: userA1, aud: TEST_BASE_URL, iat: now, exp: now + 600 };
    const accessClaims = (claims: JWTPayload = {}): JWTPayload => ({
      client_id: appA.appId,
      token_use: 'access',
      iss: TEST_BASE_URL,
      aud: TEST_BASE_URL,
      sub: appA.appId,
      iat: now,
      exp: now + 300,
      jti: randomUUID(),
      ...claims,
    });
    const stranger = (header: Record<string, unknown>, claims: JWTPayload) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ES256', ...header }).sign(strangerKey);
    const hs256 = (header: Record<string, unknown>, claims: Record<string, unknown>, secret: string) => {
      const unsigned = unsignedJwt({ alg: 'HS256', ...header }, claims).slice(0, -1);
      return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
    };
    const entries: [string, string][] = [
      ['alg none (user token)', unsignedJwt({ alg: 'none', kid: appA.keyId }, userClaims)],
      [
        'alg none (access token)',
        unsignedJwt({ alg: 'none', kid: serviceKid, typ: 'at+jwt' }, accessClaims()),
      ],
      [
        'HS256 with the application public key',
        hs256({ kid: appA.keyId, typ: 'JWT' }, userClaims, appA.key.publicPem),
      ],
      [
        'HS256 with the service public key',
        hs256({ kid: serviceKid, typ: 'at+jwt' }, accessClaims(), servicePublicPem),
      ],
      ['unknown kid (user token)', await subjectToken(appA, userA1, { header: { kid: 'no-such-key' } })],
      ['unknown kid (access token)', await stranger({ kid: 'no-such-key', typ: 'at+jwt' }, accessClaims())],
      [
        'access token with a wrong aud, foreign key',
        await stranger({ kid: serviceKid, typ: 'at+jwt' }, accessClaims({ aud: ELSEWHERE })),
      ],
      [
        'access token with a wrong iss, foreign key',
        await stranger({ kid: serviceKid, typ: 'at+jwt' }, accessClaims({ iss: ELSEWHERE })),
      ],
      ['user token with a wrong aud', await subjectToken(appA, userA1, { claims: { aud: ELSEWHERE } })],
      ['user token with a wrong iss', await subjectToken(appA, userA1, { claims: { iss: appB.appId } })],
      ['expired user token', await subjectToken(appA, userA1, { iat: now - 7200, lifetimeSeconds: 600 })],
      ['client assertion as bearer', await clientAssertion(appA)],
    ];
    for (const [name, token] of entries) tokens.set(name, token);
  });
  afterAll(() => t?.close());

  const attacks: Attack[] = [
    { name: 'no Authorization header', authorization: () => undefined },
    { name: 'Bearer garbage', authorization: () => 'Bearer garbage' },
    { name: 'Basic xyz', authorization: () => 'Basic xyz' },
    ...[
      'alg none (user token)',
      'alg none (access token)',
      'HS256 with the application public key',
      'HS256 with the service public key',
      'unknown kid (user token)',
      'unknown kid (access token)',
      'access token with a wrong aud, foreign key',
      'access token with a wrong iss, foreign key',
      'user token with a wrong aud',
      'user token with a wrong iss',
      'expired user token',
      'client assertion as bearer',
    ].map((name) => ({
      name,
      authorization: () => {
        const token = tokens.get(name);
        if (!token) throw new Error(`no token built for ${name}`);
        return bearer(token);
      },
    })),
  ];

  it('the document has operations, and every scheme they name is declared', () => {
    expect(ops.length).toBeGreaterThan(0);
    const unknownSchemes = ops.flatMap((op) =>
      op.schemes
        .filter((scheme) => !document.components?.securitySchemes?.[scheme])
        .map((scheme) => `${op.name}: ${scheme}`),
    );
    expect(unknownSchemes).toEqual([]);
  });

  it.each(attacks.map((attack) => [attack.name, attack] as const))(
    'every secured operation answers 401 to: %s',
    async (_name, attack) => {
      const failures = await sweep(secured(), async (op) => {
        attacked.set(op.name, (attacked.get(op.name) ?? new Set<string>()).add(attack.name));
        return unauthorizedProblem(
          op,
          await call(
            op,
            fill(op, () => randomUUID()),
            attack.authorization(),
            'attack',
          ),
        );
      });
      expect(failures).toEqual([]);
    },
  );

  it('every CC-only operation answers 401 to a valid user token (of the owner, when it takes an id)', async () => {
    expect(ccOnly().length).toBeGreaterThan(0);
    const failures = await sweep(ccOnly(), async (op) => {
      const subject = pathParameters(op).length ? resourceFor(op).owner : userA1;
      const token = bearer(await subjectToken(appA, subject));
      return unauthorizedProblem(op, await call(op, resourceOrRandomPath(op), token, 'valid'));
    });
    expect(failures).toEqual([]);
  });

  /** The owned resource's path when the operation takes one, else the plain path. */
  function resourceOrRandomPath(op: Op): string {
    return pathParameters(op).length ? resourcePath(op) : fill(op, () => randomUUID());
  }

  it('control: the owner reaches every read of a resource (so the 404s below are tenancy, not typos)', async () => {
    const reads = withPathParameters().filter((op) => op.method === 'get');
    expect(reads.length).toBeGreaterThan(0);
    const failures = await sweep(reads, async (op) => {
      const asApp = await call(op, resourcePath(op), bearer(tokenA), 'valid');
      if (asApp.status !== 200) return `app A's access token: expected 200, got ${describeOutcome(asApp)}`;
      if (op.path.startsWith(SMS_STATUS_PREFIX) && isRecord(asApp.body) && asApp.body.status === 'UNKNOWN')
        return "app A's access token: its own message answered UNKNOWN";
      if (op.schemes.includes('BearerAuth')) {
        const owner = bearer(await subjectToken(appA, resourceFor(op).owner));
        const asOwner = await call(op, resourcePath(op), owner, 'valid');
        if (asOwner.status !== 200)
          return `the owner's user token: expected 200, got ${describeOutcome(asOwner)}`;
      }
      return undefined;
    });
    expect(failures).toEqual([]);
  });

  it("every operation on an id answers 404 to another application's access token and user tokens", async () => {
    expect(withPathParameters().length).toBeGreaterThan(0);
    const failures = await sweep(withPathParameters(), async (op) => {
      const asAppB = await call(op, resourcePath(op), bearer(tokenB), 'valid');
      const problem = notFoundProblem(op, asAppB);
      if (problem) return `app B's access token: ${problem}`;
      // B's user token naming A's owner as its subject: still another application.
      const asUserOfB = await call(
        op,
        resourcePath(op),
        bearer(await subjectToken(appB, resourceFor(op).owner)),
        'valid',
      );
      const userProblem = op.schemes.includes('BearerAuth')
        ? notFoundProblem(op, asUserOfB)
        : unauthorizedProblem(op, asUserOfB);
      return userProblem ? `app B's user token for A's owner: ${userProblem}` : undefined;
    });
    expect(failures).toEqual([]);
  });

  it('every operation on an id answers 404 (401 when CC-only) to a user token of another owner', async () => {
    const failures = await sweep(withPathParameters(), async (op) => {
      const outcome = await call(op, resourcePath(op), bearer(await subjectToken(appA, userA2)), 'valid');
      return op.schemes.includes('BearerAuth')
        ? notFoundProblem(op, outcome)
        : unauthorizedProblem(op, outcome);
    });
    expect(failures).toEqual([]);
  });

  it('skipped nothing: every secured operation met every attack', () => {
    const missing = secured().flatMap((op) =>
      attacks
        .filter((attack) => !attacked.get(op.name)?.has(attack.name))
        .map((attack) => `${op.name}: not attacked with ${attack.name}`),
    );
    expect(secured().length).toBeGreaterThan(0);
    expect(missing).toEqual([]);
  });

  it('no operation became public by mistake', () => {
    expect(
      ops
        .filter((op) => op.schemes.length === 0)
        .map((op) => op.name)
        .sort(),
    ).toEqual([
      'GET /v1/.well-known/jwks.json',
      'GET /v1/.well-known/oauth-authorization-server',
      'GET /v1/health/live',
      'GET /v1/health/ready',
      'POST /v1/oauth/app/token',
      'POST /v1/oauth/token',
    ]);
  });

  it('snapshot: the accepted security schemes of every operation', () => {
    const snapshot = Object.fromEntries(
      ops.map((op) => [op.name, op.schemes] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    expect(Object.keys(snapshot)).toHaveLength(ops.length);
    expect(snapshot).toEqual({
      'DELETE /v1/companies/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'DELETE /v1/users/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'DELETE /v1/wallet/accounts/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/.well-known/jwks.json': [],
      'GET /v1/.well-known/oauth-authorization-server': [],
      'GET /v1/audit': ['OAuth2ClientCredentials'],
      'GET /v1/companies/all': ['OAuth2ClientCredentials'],
      'GET /v1/companies/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/companies/{uuid}/documents': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/companies/{uuid}/kyc-data': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/companies/{uuid}/kyc-data/history': ['OAuth2ClientCredentials'],
      'GET /v1/documents/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/documents/{uuid}/content': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/events': ['OAuth2ClientCredentials'],
      'GET /v1/events/{uuid}': ['OAuth2ClientCredentials'],
      'GET /v1/health/live': [],
      'GET /v1/health/ready': [],
      'GET /v1/kyc/sessions/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/mobile/sms/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/users/all': ['OAuth2ClientCredentials'],
      'GET /v1/users/{uuid}': ['OAuth2ClientCredentials'],
      'GET /v1/users/{uuid}/documents': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/users/{uuid}/kyc-data': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/users/{uuid}/kyc-data/history': ['OAuth2ClientCredentials'],
      'GET /v1/wallet/accounts/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/wallet/accounts/{uuid}/balance': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/wallet/accounts/{uuid}/fees': ['OAuth2ClientCredentials'],
      'GET /v1/wallet/accounts/{uuid}/fulloperado': ['OAuth2ClientCredentials'],
      'GET /v1/wallet/accounts/{uuid}/limits': ['OAuth2ClientCredentials'],
      'GET /v1/wallet/accounts/{uuid}/operado': ['OAuth2ClientCredentials'],
      'GET /v1/wallet/accounts/{uuid}/statement': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/wallet/accounts/{uuid}/transactions': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/wallet/transactions/all': ['OAuth2ClientCredentials'],
      'GET /v1/wallet/transactions/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'GET /v1/wallet/transactions/{uuid}/reversals': ['BearerAuth', 'OAuth2ClientCredentials'],
      'PATCH /v1/companies/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'PATCH /v1/users/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'PATCH /v1/users/{uuid}/kyc-data': ['BearerAuth', 'OAuth2ClientCredentials'],
      'PATCH /v1/wallet/accounts/{uuid}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'PATCH /v1/wallet/accounts/{uuid}/alias': ['BearerAuth', 'OAuth2ClientCredentials'],
      'PATCH /v1/wallet/accounts/{uuid}/balance': ['OAuth2ClientCredentials'],
      'PATCH /v1/wallet/accounts/{uuid}/fees': ['OAuth2ClientCredentials'],
      'PATCH /v1/wallet/accounts/{uuid}/limits': ['OAuth2ClientCredentials'],
      'POST /v1/companies': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/companies/{uuid}/documents': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/companies/{uuid}/kyc-data': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/counterparty': ['OAuth2ClientCredentials'],
      'POST /v1/kyc/sessions': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/kyc/sessions/{uuid}/steps/{step}': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/mobile/simSwap': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/mobile/sms': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/oauth/app/token': [],
      'POST /v1/oauth/token': [],
      'POST /v1/users': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/users/{uuid}/documents': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/users/{uuid}/kyc-data': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/wallet/accounts': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/wallet/accounts/{uuid}/balance': ['OAuth2ClientCredentials'],
      'POST /v1/wallet/accounts/{uuid}/limits': ['OAuth2ClientCredentials'],
      'POST /v1/wallet/transactions': ['BearerAuth', 'OAuth2ClientCredentials'],
      'POST /v1/wallet/transactions/{uuid}/reversals': ['BearerAuth', 'OAuth2ClientCredentials'],
    });
  });
});
