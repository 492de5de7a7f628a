import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import type { OpenAPIObject } from '@nestjs/swagger';
import request from 'supertest';
import { PinoLogger } from '../src/common/logging/pino-logger.js';
import { KycVerificationService } from '../src/modules/kyc/sessions/kyc-verification.service.js';
import { KYC_STEPS } from '../src/modules/kyc/sessions/entities/kyc-session.entity.js';
import { flattenPlan, rowsRead, type PlanNode } from './support/plans.js';
import { WebhooksService } from '../src/modules/webhooks/webhooks.service.js';
import { ClearingService } from '../src/modules/transfers/clearing/clearing.service.js';
import { uuidv7 } from '../src/common/ids/uuid-v7.js';
import { encodeTransferRequest } from '../src/modules/transfers/transfer-function.contract.js';
import { MINOR_UNITS } from '../src/modules/wallet/money.js';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import { bearer, companyBody, userBody } from './support/identity.js';
import { cliJson, runCli } from './support/processes.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { DIRECTORY, transferBody } from './support/transfers.js';
import { accountBody, createOwner, limitsOf, openAccount, setBalance } from './support/wallet.js';
import { freshKeyPair } from './support/keys.js';
import { serverPath } from './support/openapi.js';
import { SigningKeyAuditService } from '../src/modules/auth/signing-key-audit.service.js';
import { SigningKeysService } from '../src/modules/auth/signing-keys.service.js';

/**
 * The audit trail (docs/decisions/0032-audit-trail.md). Every POST/PUT/PATCH/DELETE operation of the OpenAPI
 * document of the real application, and every audited read, must have a case below (a missing one fails naming
 * the operation) or an exemption with its reason. Each case's valid request leaves exactly its records, with the
 * caller's application, principal (client, and user token where the route takes one), route template and
 * request id; its refused request (bad body or missing resource) leaves none.
 */

type Who = 'client' | 'subject';
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

interface Expected {
  resourceType: string;
  resourceId: string;
  outcome: string;
}

/** A request ready to send (fixtures made), with the answer and the records it must leave. */
interface Prepared {
  method: Method;
  path: string;
  authorization: string;
  json?: object;
  multipart?: { fields: Record<string, string>; file: string };
  status: number;
  records: Expected[];
  /** The principal the records must name (client: the application id; subject: the user's uuid). */
  principal: string;
}

interface Case {
  valid(who: Who): Promise<Prepared>;
  /** A refusal: an invalid body or a resource that does not exist. */
  refused(): Promise<Prepared>;
}

/** Operations that change none of the audited things, with why. Keep it short. */
const EXEMPT: Record<string, string> = {
  'POST /v1/oauth/app/token': 'issues an access token; changes no stored resource',
  'POST /v1/oauth/token': 'issues an access token (RFC 6749 form); changes no stored resource',
  'POST /v1/mobile/simSwap': 'asks the operator when a SIM last changed; stores nothing',
  'POST /v1/counterparty': 'looks a CBU/CVU up in the directory; stores nothing',
};

/** Reads that are audited (KYC data and a document's content); GET routes not listed here are not. */
const AUDITED_READS = [
  'GET /v1/users/{uuid}/kyc-data',
  'GET /v1/users/{uuid}/kyc-data/history',
  'GET /v1/companies/{uuid}/kyc-data',
  'GET /v1/companies/{uuid}/kyc-data/history',
  'GET /v1/documents/{uuid}/content',
];

const MUTATING: readonly string[] = ['post', 'put', 'patch', 'delete'];
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

interface AuditRow {
  app_id: string | null;
  principal_type: string;
  principal: string;
  action: string;
  resource_type: string;
  resource_id: string;
  outcome: string;
  request_id: string | null;
}

describe('audit trail', () => {
  let t: TestApp;
  let document: OpenAPIObject;
  let app: TestClient;
  let token: string;

  /** Each operation, named as records name it: the route template on the server (`PATCH /v1/users/{uuid}`). */
  const operations = (): { name: string; schemes: string[] }[] =>
    Object.entries(document.paths).flatMap(([path, item]) =>
      (['get', 'put', 'post', 'delete', 'patch'] as const)
        .filter((method) => item[method] !== undefined)
        .map((method) => ({
          name: `${method.toUpperCase()} ${serverPath(document)}${path}`,
          schemes: (item[method]!.security ?? document.security ?? []).flatMap(Object.keys),
        })),
    );

  const client = () => bearer(token);
  const newUser = () => createOwner(t.http, token, 'USER');
  const newCompany = () => createOwner(t.http, token, 'COMPANY');
  /** The caller's Authorization and principal: a user token speaks for `owner`. */
  const as = async (who: Who, owner: string) =>
    who === 'client'
      ? { authorization: client(), principal: app.appId }
      : { authorization: bearer(await subjectToken(app, owner)), principal: owner };

  async function upload(owner: string, kind: 'users' | 'companies' = 'users'): Promise<string> {
    const response = await request(t.http)
      .post(`/v1/${kind}/${owner}/documents`)
      .set('Authorization', client())
      .field('documentType', 'DNI_FRONT')
      .attach('file', PNG, 'front.png');
    if (response.status !== 201) throw new Error(`upload: ${response.status} ${response.text}`);
    return (response.body as { uuid: string }).uuid;
  }

  async function userWithKyc(): Promise<string> {
    const user = await newUser();
    const response = await request(t.http)
      .post(`/v1/users/${user}/kyc-data`)
      .set('Authorization', client())
      .send({ civilStatus: 'SINGLE', isPep: false, isSOAUIF: false });
    if (response.status !== 201) throw new Error(`kyc data: ${response.status} ${response.text}`);
    return user;
  }

  async function session(owner: string): Promise<string> {
    const response = await request(t.http)
      .post('/v1/kyc/sessions')
      .set('Authorization', client())
      .send({ ownerType: 'USER', ownerId: owner });
    if (response.status !== 201) throw new Error(`session: ${response.status} ${response.text}`);
    return (response.body as { uuid: string }).uuid;
  }

  /** A user with an account holding `balance`. */
  async function funded(balance = 0): Promise<{ user: string; account: string; cvu: string }> {
    const user = await newUser();
    const account = await openAccount(t.http, token, app.appId, user);
    if (balance > 0) await setBalance(t.http, token, account.uuid, balance);
    return { user, account: account.uuid, cvu: account.cvu };
  }

  const missing = randomUUID();
  const one = (resourceType: string, resourceId: string, outcome: string): Expected[] => [
    { resourceType, resourceId, outcome },
  ];
  const refusal = (method: Method, path: string, json?: object, status = 404): Prepared => ({
    method,
    path,
    authorization: client(),
    json,
    status,
    records: [],
    principal: app.appId,
  });

  /** The case of `GET route` (`/v1/users/{uuid}/…`): a read of `resourceType` of a new owner; 404 for none. */
  const ownerRead = (
    route: string,
    newOwner: () => Promise<string>,
    resourceType: string,
  ): Record<string, Case> => {
    const path = (owner: string) => route.replace('{uuid}', owner);
    const read: Case = {
      valid: async (who) => {
        const owner = await newOwner();
        return {
          method: 'get',
          path: path(owner),
          ...(await as(who, owner)),
          status: 200,
          records: one(resourceType, owner, 'read'),
        };
      },
      refused: async () => refusal('get', path(missing)),
    };
    return { [`GET ${route}`]: read };
  };

  /** Operation → its case. Owner-scoped fixtures are owned by the subject when a user token calls. */
  const CASES: Record<string, Case> = {
    'POST /v1/users': {
      valid: async (who) => {
        const body = userBody();
        if (who === 'client') {
          return {
            method: 'post',
            path: '/v1/users',
            authorization: client(),
            json: body,
            status: 201,
            records: [],
            principal: app.appId,
          };
        }
        const self = randomUUID();
        return {
          method: 'post',
          path: '/v1/users',
          ...(await as('subject', self)),
          json: body,
          status: 201,
          records: one('user', self, 'created'),
        };
      },
      refused: async () => refusal('post', '/v1/users', { firstName: 'x' }, 400),
    },
    'PATCH /v1/users/{uuid}': {
      valid: async (who) => {
        const user = await newUser();
        return {
          method: 'patch',
          path: `/v1/users/${user}`,
          ...(await as(who, user)),
          // A field the user may change itself (its names are the application's: decision 0054).
          json: { email: 'ana@example.com' },
          status: 200,
          records: one('user', user, 'updated'),
        };
      },
      refused: async () => refusal('patch', `/v1/users/${missing}`, { firstName: 'Ana' }),
    },
    'DELETE /v1/users/{uuid}': {
      valid: async (who) => {
        const user = await newUser();
        return {
          method: 'delete',
          path: `/v1/users/${user}`,
          ...(await as(who, user)),
          status: 204,
          records: one('user', user, 'deleted'),
        };
      },
      refused: async () => refusal('delete', `/v1/users/${missing}`),
    },
    'POST /v1/users/{uuid}/kyc-data': {
      valid: async (who) => {
        const user = await newUser();
        return {
          method: 'post',
          path: `/v1/users/${user}/kyc-data`,
          ...(await as(who, user)),
          json: { civilStatus: 'SINGLE', isPep: false, isSOAUIF: false },
          status: 201,
          records: one('kyc_data', user, 'created'),
        };
      },
      refused: async () => refusal('post', `/v1/users/${await newUser()}/kyc-data`, { isPep: 'no' }, 400),
    },
    'PATCH /v1/users/{uuid}/kyc-data': {
      valid: async (who) => {
        const user = await userWithKyc();
        return {
          method: 'patch',
          path: `/v1/users/${user}/kyc-data`,
          ...(await as(who, user)),
          json: { isPep: true },
          status: 200,
          records: one('kyc_data', user, 'updated'),
        };
      },
      // A user without KYC data: 404.
      refused: async () => refusal('patch', `/v1/users/${await newUser()}/kyc-data`, { isPep: true }),
    },
    ...ownerRead('/v1/users/{uuid}/kyc-data', userWithKyc, 'kyc_data'),
    ...ownerRead('/v1/users/{uuid}/kyc-data/history', userWithKyc, 'kyc_history'),
    'POST /v1/companies': {
      valid: async (who) => {
        if (who === 'client') {
          return {
            method: 'post',
            path: '/v1/companies',
            authorization: client(),
            json: companyBody(),
            status: 201,
            records: [],
            principal: app.appId,
          };
        }
        const self = randomUUID();
        return {
          method: 'post',
          path: '/v1/companies',
          ...(await as('subject', self)),
          json: companyBody(),
          status: 201,
          records: one('company', self, 'created'),
        };
      },
      refused: async () => refusal('post', '/v1/companies', { legalName: 1 }, 400),
    },
    'PATCH /v1/companies/{uuid}': {
      valid: async (who) => {
        const company = await newCompany();
        return {
          method: 'patch',
          path: `/v1/companies/${company}`,
          ...(await as(who, company)),
          json: { dataSection: 'gestionDeRiesgo', data: { nivel: 'bajo' } },
          status: 200,
          records: one('kyc_data', company, 'created'),
        };
      },
      refused: async () =>
        refusal('patch', `/v1/companies/${missing}`, { dataSection: 'gestionDeRiesgo', data: { a: 1 } }),
    },
    'DELETE /v1/companies/{uuid}': {
      valid: async (who) => {
        const company = await newCompany();
        return {
          method: 'delete',
          path: `/v1/companies/${company}`,
          ...(await as(who, company)),
          status: 204,
          records: one('company', company, 'deleted'),
        };
      },
      refused: async () => refusal('delete', `/v1/companies/${missing}`),
    },
    'POST /v1/companies/{uuid}/kyc-data': {
      valid: async (who) => {
        const company = await newCompany();
        return {
          method: 'post',
          path: `/v1/companies/${company}/kyc-data`,
          ...(await as(who, company)),
          json: { data: { actividad: 'comercio' } },
          status: 201,
          records: one('kyc_data', company, 'created'),
        };
      },
      refused: async () =>
        refusal('post', `/v1/companies/${await newCompany()}/kyc-data`, { data: 'x' }, 400),
    },
    ...ownerRead('/v1/companies/{uuid}/kyc-data', newCompany, 'kyc_data'),
    ...ownerRead('/v1/companies/{uuid}/kyc-data/history', newCompany, 'kyc_history'),
    'POST /v1/users/{uuid}/documents': {
      valid: async (who) => {
        const user = await newUser();
        return {
          method: 'post',
          path: `/v1/users/${user}/documents`,
          ...(await as(who, user)),
          multipart: { fields: { documentType: 'DNI_FRONT' }, file: 'file' },
          status: 201,
          records: [], // the document's id is known from the answer (filled in by the runner)
        };
      },
      refused: async () => ({
        ...refusal('post', `/v1/users/${missing}/documents`),
        multipart: { fields: { documentType: 'DNI_FRONT' }, file: 'file' },
      }),
    },
    'POST /v1/companies/{uuid}/documents': {
      valid: async (who) => {
        const company = await newCompany();
        return {
          method: 'post',
          path: `/v1/companies/${company}/documents`,
          ...(await as(who, company)),
          multipart: { fields: { documentType: 'DNI_FRONT' }, file: 'file' },
          status: 201,
          records: [],
        };
      },
      refused: async () => ({
        ...refusal('post', `/v1/companies/${missing}/documents`),
        multipart: { fields: { documentType: 'DNI_FRONT' }, file: 'file' },
      }),
    },
    'GET /v1/documents/{uuid}/content': {
      valid: async (who) => {
        const user = await newUser();
        const documentId = await upload(user);
        return {
          method: 'get',
          path: `/v1/documents/${documentId}/content`,
          ...(await as(who, user)),
          status: 200,
          records: one('document', documentId, 'read'),
        };
      },
      refused: async () => refusal('get', `/v1/documents/${missing}/content`),
    },
    'POST /v1/kyc/sessions': {
      valid: async (who) => {
        const user = await newUser();
        return {
          method: 'post',
          path: '/v1/kyc/sessions',
          ...(await as(who, user)),
          json: { ownerType: 'USER', ownerId: user },
          status: 201,
          records: [],
        };
      },
      refused: async () => refusal('post', '/v1/kyc/sessions', { ownerType: 'USER', ownerId: missing }, 400),
    },
    'POST /v1/kyc/sessions/{uuid}/steps/{step}': {
      valid: async (who) => {
        const user = await newUser();
        const documentId = await upload(user);
        const sessionId = await session(user);
        return {
          method: 'post',
          path: `/v1/kyc/sessions/${sessionId}/steps/DOCUMENT_FRONT`,
          ...(await as(who, user)),
          json: { documentUuid: documentId },
          status: 202,
          records: one('kyc_session', sessionId, 'submitted DOCUMENT_FRONT'),
        };
      },
      refused: async () => refusal('post', `/v1/kyc/sessions/${missing}/steps/DOCUMENT_FRONT`, {}),
    },
    'POST /v1/wallet/accounts': {
      valid: async (who) => {
        const user = await newUser();
        return {
          method: 'post',
          path: '/v1/wallet/accounts',
          ...(await as(who, user)),
          json: accountBody(app.appId, user),
          status: 201,
          records: [],
        };
      },
      refused: async () =>
        refusal(
          'post',
          '/v1/wallet/accounts',
          accountBody(app.appId, await newUser(), 'USER', { fees: 'x' }),
          400,
        ),
    },
    'PATCH /v1/wallet/accounts/{uuid}': {
      valid: async (who) => {
        const { user, account } = await funded();
        return {
          method: 'patch',
          path: `/v1/wallet/accounts/${account}`,
          ...(await as(who, user)),
          json: { status: 'INACTIVE' },
          status: 200,
          records: one('account', account, 'updated'),
        };
      },
      refused: async () => refusal('patch', `/v1/wallet/accounts/${missing}`, { status: 'INACTIVE' }),
    },
    'DELETE /v1/wallet/accounts/{uuid}': {
      valid: async (who) => {
        const { user, account } = await funded();
        return {
          method: 'delete',
          path: `/v1/wallet/accounts/${account}`,
          ...(await as(who, user)),
          status: 200,
          records: one('account', account, 'deleted'),
        };
      },
      refused: async () => refusal('delete', `/v1/wallet/accounts/${missing}`),
    },
    'PATCH /v1/wallet/accounts/{uuid}/alias': {
      valid: async (who) => {
        const { user, account } = await funded();
        return {
          method: 'patch',
          path: `/v1/wallet/accounts/${account}/alias`,
          ...(await as(who, user)),
          json: { newAlias: `audit.${randomUUID().slice(0, 8)}` },
          status: 200,
          records: one('account', account, 'updated'),
        };
      },
      refused: async () =>
        refusal('patch', `/v1/wallet/accounts/${missing}/alias`, { newAlias: 'audit.none.1' }),
    },
    'POST /v1/wallet/accounts/{uuid}/balance': {
      valid: async (who) => {
        const { user, account } = await funded();
        return {
          method: 'post',
          path: `/v1/wallet/accounts/${account}/balance`,
          ...(await as(who, user)),
          json: { balance: 50 },
          status: 200,
          records: one('account', account, 'balance set'),
        };
      },
      refused: async () => refusal('post', `/v1/wallet/accounts/${missing}/balance`, { balance: 50 }),
    },
    'PATCH /v1/wallet/accounts/{uuid}/balance': {
      valid: async (who) => {
        const { user, account } = await funded();
        return {
          method: 'patch',
          path: `/v1/wallet/accounts/${account}/balance`,
          ...(await as(who, user)),
          json: { balance: 70 },
          status: 200,
          records: one('account', account, 'balance set'),
        };
      },
      refused: async () =>
        refusal('patch', `/v1/wallet/accounts/${(await funded()).account}/balance`, { balance: 'x' }, 400),
    },
    'POST /v1/wallet/accounts/{uuid}/limits': {
      valid: async (who) => {
        const { user, account } = await funded();
        return {
          method: 'post',
          path: `/v1/wallet/accounts/${account}/limits`,
          ...(await as(who, user)),
          json: limitsOf(2000),
          status: 200,
          records: one('account', account, 'limits set'),
        };
      },
      refused: async () => refusal('post', `/v1/wallet/accounts/${missing}/limits`, limitsOf(2000)),
    },
    'PATCH /v1/wallet/accounts/{uuid}/limits': {
      valid: async (who) => {
        const { user, account } = await funded();
        return {
          method: 'patch',
          path: `/v1/wallet/accounts/${account}/limits`,
          ...(await as(who, user)),
          json: limitsOf(3000),
          status: 200,
          records: one('account', account, 'limits set'),
        };
      },
      refused: async () => refusal('patch', `/v1/wallet/accounts/${missing}/limits`, limitsOf(3000)),
    },
    'PATCH /v1/wallet/accounts/{uuid}/fees': {
      valid: async (who) => {
        const { user, account } = await funded();
        return {
          method: 'patch',
          path: `/v1/wallet/accounts/${account}/fees`,
          ...(await as(who, user)),
          json: { feeType: 'FIXED', amount: 1 },
          status: 200,
          records: one('account', account, 'fees set'),
        };
      },
      refused: async () =>
        refusal('patch', `/v1/wallet/accounts/${missing}/fees`, { feeType: 'FIXED', amount: 1 }),
    },
    'POST /v1/wallet/transactions': {
      // An internal transfer (to another account of this service): its record comes from wallet_write_internal.
      valid: async (who) => {
        const sender = await funded(100);
        const receiver = await funded();
        return {
          method: 'post',
          path: '/v1/wallet/transactions',
          ...(await as(who, sender.user)),
          json: transferBody(sender.account, receiver.cvu, 10),
          status: 201,
          records: [], // the transfer's id comes with the answer (filled in by the runner)
        };
      },
      // Not enough money: refused by the function, which writes nothing.
      refused: async () =>
        refusal(
          'post',
          '/v1/wallet/transactions',
          transferBody((await funded(1)).account, DIRECTORY.nacion.number, 10),
          400,
        ),
    },
    'POST /v1/wallet/transactions/{uuid}/reversals': {
      // The receiving account's application (or, with a user token, its owner) gives part of a settled internal
      // transfer back: recorded by wallet_reverse_transfer (the new WITHDRAW of the account that gives back).
      valid: async (who) => {
        const sender = await funded(100);
        const receiver = await funded(100);
        const sent = await request(t.http)
          .post('/v1/wallet/transactions')
          .set('Authorization', client())
          .send(transferBody(sender.account, receiver.cvu, 10));
        if (sent.status !== 201) throw new Error(`transfer: ${sent.status} ${sent.text}`);
        // The receiver's side (its DEPOSIT): the row a user token of the receiving owner reaches.
        const [deposit] = (await t.dataSource.query(
          `SELECT linked_transfer_id AS id FROM transfers WHERE id = $1`,
          [(sent.body as { uuid: string }).uuid],
        )) as { id: string }[];
        return {
          method: 'post',
          path: `/v1/wallet/transactions/${deposit.id}/reversals`,
          ...(await as(who, receiver.user)),
          json: { amount: 5, reason: 'devolución' },
          status: 201,
          records: [], // the new transfer's id comes with the answer
        };
      },
      refused: async () =>
        refusal('post', `/v1/wallet/transactions/${missing}/reversals`, { reason: 'devolución' }),
    },
    'POST /v1/mobile/sms': {
      valid: async (who) => {
        const user = await newUser();
        return {
          method: 'post',
          path: '/v1/mobile/sms',
          ...(await as(who, user)),
          json: { dnis: '541123456789', message: 'Hola' },
          status: 200,
          records: [],
        };
      },
      refused: async () => ({ ...refusal('post', '/v1/mobile/sms', { dnis: 'x' }, 400) }),
    },
  };

  /** Records whose id only the answer knows: the created resource's uuid (or messageId). */
  function fromAnswer(op: string, who: Who, body: Record<string, unknown>, prepared: Prepared): Expected[] {
    const id = (body.uuid ?? body.message_id) as string;
    switch (op) {
      case 'POST /v1/users':
        return who === 'client' ? one('user', id, 'created') : prepared.records;
      case 'POST /v1/companies':
        return who === 'client' ? one('company', id, 'created') : prepared.records;
      case 'POST /v1/users/{uuid}/documents':
      case 'POST /v1/companies/{uuid}/documents':
        return one('document', id, 'created');
      case 'POST /v1/kyc/sessions':
        return one('kyc_session', id, 'created');
      case 'POST /v1/wallet/accounts':
        return one('account', id, 'created');
      case 'POST /v1/wallet/transactions':
      case 'POST /v1/wallet/transactions/{uuid}/reversals':
        return one('transfer', id, 'ACREDITADO');
      case 'POST /v1/mobile/sms':
        return one('sms', id, 'created');
      default:
        return prepared.records;
    }
  }

  async function send(prepared: Prepared, requestId: string): Promise<request.Response> {
    const agent = request(t.http);
    let test = agent[prepared.method](prepared.path)
      .set('Authorization', prepared.authorization)
      .set('X-Request-Id', requestId);
    if (prepared.multipart) {
      for (const [key, value] of Object.entries(prepared.multipart.fields)) test = test.field(key, value);
      test = test.attach(prepared.multipart.file, PNG, 'audit.png');
    } else if (prepared.json !== undefined) {
      test = test.send(prepared.json);
    }
    return test;
  }

  const recordsOf = async (requestId: string): Promise<AuditRow[]> =>
    (await t.dataSource.query(
      `SELECT app_id, principal_type, principal, action, resource_type, resource_id, outcome, request_id
         FROM audit_records WHERE request_id = $1 ORDER BY id`,
      [requestId],
    )) as AuditRow[];

  beforeAll(async () => {
    t = await startTestApp({ runWorker: false });
    document = t.openApi;
    app = await registerClient(t.app, 'audit');
    token = await accessToken(t.http, app);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('has a case or an exemption for every mutating operation and every audited read of the document', () => {
    const names = operations().map((op) => op.name);
    const mutating = operations().filter((op) => MUTATING.includes(op.name.split(' ')[0].toLowerCase()));
    const without = [...mutating.map((op) => op.name), ...AUDITED_READS].filter(
      (name) => CASES[name] === undefined && EXEMPT[name] === undefined,
    );
    expect(without).toEqual([]);
    // No stale entries: every case and exemption names an operation of the document.
    expect([...Object.keys(CASES), ...Object.keys(EXEMPT)].filter((name) => !names.includes(name))).toEqual(
      [],
    );
    expect(mutating.length).toBeGreaterThan(20);
  });

  it('documents GET /v1/audit under its own tag, with its query', () => {
    const operation = document.paths['/audit']?.get;
    expect(operation?.tags).toEqual(['Audit']);
    expect(
      (operation?.parameters ?? []).map((parameter) => (parameter as { name: string }).name).sort(),
    ).toEqual(['after', 'cursor', 'from', 'limit', 'resource', 'to']);
  });

  it('leaves exactly the expected records for each valid request, and none for a refused one', async () => {
    const failures: string[] = [];
    for (const op of operations()) {
      const entry = CASES[op.name];
      if (!entry) continue;
      const whos: Who[] = op.schemes.includes('BearerAuth') ? ['client', 'subject'] : ['client'];
      for (const who of whos) {
        try {
          const prepared = await entry.valid(who);
          const requestId = `audit-${randomUUID()}`;
          const response = await send(prepared, requestId);
          if (response.status !== prepared.status) {
            failures.push(
              `${op.name} as ${who}: expected ${prepared.status}, got ${response.status} ${response.text}`,
            );
            continue;
          }
          const expected = fromAnswer(op.name, who, response.body as Record<string, unknown>, prepared).map(
            (record) => ({
              app_id: app.appId,
              principal_type: who,
              principal: prepared.principal,
              action: op.name,
              resource_type: record.resourceType,
              resource_id: record.resourceId,
              outcome: record.outcome,
              request_id: requestId,
            }),
          );
          const rows = await recordsOf(requestId);
          if (expected.length === 0 || JSON.stringify(rows) !== JSON.stringify(expected)) {
            failures.push(
              `${op.name} as ${who}: records ${JSON.stringify(rows)}, expected ${JSON.stringify(expected)}`,
            );
          }
        } catch (error) {
          failures.push(`${op.name} as ${who}: could not be exercised: ${(error as Error).message}`);
        }
      }
      try {
        const refused = await entry.refused();
        const requestId = `audit-${randomUUID()}`;
        const response = await send(refused, requestId);
        if (response.status !== refused.status) {
          failures.push(
            `${op.name} refused: expected ${refused.status}, got ${response.status} ${response.text}`,
          );
        }
        const rows = await recordsOf(requestId);
        if (rows.length > 0) failures.push(`${op.name} refused: left ${JSON.stringify(rows)}`);
      } catch (error) {
        failures.push(`${op.name} refused: could not be exercised: ${(error as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('records external transfers (wallet_create_transfers), each transfer of a group, and the clearing outcome', async () => {
    // External: INICIADO, recorded by wallet_create_transfers with the request's id and route.
    const sender = await funded(500);
    const external = `audit-${randomUUID()}`;
    const sent = await request(t.http)
      .post('/v1/wallet/transactions')
      .set('Authorization', client())
      .set('X-Request-Id', external)
      .send(transferBody(sender.account, DIRECTORY.nacion.number, 10));
    expect(sent.status).toBe(201);
    const transferId = (sent.body as { uuid: string }).uuid;
    expect(await recordsOf(external)).toEqual([
      {
        app_id: app.appId,
        principal_type: 'client',
        principal: app.appId,
        action: 'POST /v1/wallet/transactions',
        resource_type: 'transfer',
        resource_id: transferId,
        outcome: 'INICIADO',
        request_id: external,
      },
    ]);

    // The clearing rail's verdict (the worker's side): system:clearing.
    const clearing = t.app.get(ClearingService);
    expect(await clearing.present(transferId)).toBe(true);
    expect(await clearing.settle(transferId, 'ACREDITADO')).toBe('settled');
    const settled = (await t.dataSource.query(
      `SELECT app_id, principal_type, principal, action, outcome, request_id FROM audit_records
        WHERE resource_id = $1 AND principal_type = 'system'`,
      [transferId],
    )) as AuditRow[];
    expect(settled).toEqual([
      {
        app_id: app.appId,
        principal_type: 'system',
        principal: 'clearing',
        action: 'clearing settle',
        outcome: 'ACREDITADO',
        request_id: null,
      },
    ]);

    // Concurrent internal transfers (grouped by the batcher): one record each, with its own request id.
    const receivers = await Promise.all(Array.from({ length: 6 }, () => funded()));
    const ids = receivers.map(() => `audit-${randomUUID()}`);
    const answers = await Promise.all(
      receivers.map((receiver, index) =>
        request(t.http)
          .post('/v1/wallet/transactions')
          .set('Authorization', client())
          .set('X-Request-Id', ids[index])
          .send(transferBody(sender.account, receiver.cvu, 1)),
      ),
    );
    for (const [index, answer] of answers.entries()) {
      expect(answer.status).toBe(201);
      const rows = await recordsOf(ids[index]);
      expect(rows).toEqual([
        expect.objectContaining({
          resource_id: (answer.body as { uuid: string }).uuid,
          outcome: 'ACREDITADO',
          action: 'POST /v1/wallet/transactions',
        }),
      ]);
    }
  });

  // KycVerificationService runs in the worker (not loaded here): built by hand on the app's own pieces.
  it("records the KYC provider's verdict on a step as system:kyc-provider", async () => {
    const user = await newUser();
    const documentId = await upload(user);
    const sessionId = await session(user);
    const submitted = await request(t.http)
      .post(`/v1/kyc/sessions/${sessionId}/steps/DOCUMENT_FRONT`)
      .set('Authorization', client())
      .send({ documentUuid: documentId });
    expect(submitted.status).toBe(202);
    expect(
      await new KycVerificationService(
        t.dataSource,
        t.app.get(WebhooksService),
        await t.app.resolve(PinoLogger),
      ).complete(sessionId, 'DOCUMENT_FRONT', 'SUCCESS'),
    ).toBe(true);
    const rows = (await t.dataSource.query(
      `SELECT app_id, principal_type, principal, action, outcome FROM audit_records
        WHERE resource_id = $1 AND principal_type = 'system'`,
      [sessionId],
    )) as AuditRow[];
    expect(rows).toEqual([
      {
        app_id: app.appId,
        principal_type: 'system',
        principal: 'kyc-provider',
        action: 'kyc verify DOCUMENT_FRONT',
        outcome: 'DOCUMENT_FRONT SUCCESS',
      },
    ]);
  });

  it('leaves no record when the change rolls back (the money function inside a transaction rolled back)', async () => {
    const sender = await funded(100);
    const receiver = await funded();
    const requestId = `audit-${randomUUID()}`;
    const parameters = encodeTransferRequest({
      id: uuidv7(),
      appId: app.appId,
      subject: null,
      accountId: sender.account,
      amount: '5',
      movementType: 'WITHDRAW',
      counterparty: {
        name: 'Receptor',
        taxId: '20111111112',
        identifierType: 'CVU',
        identifier: receiver.cvu,
        branch: null,
      },
      concept: 'VAR',
      summary: null,
      actor: `client:${app.appId}`,
      requestId,
      route: 'POST /v1/wallet/transactions',
      taxRate: '0',
      minorUnits: MINOR_UNITS,
      timeZone: t.config.operationsTimeZone,
      idempotencyKey: null,
      requestHash: null,
    });
    const runner = t.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      const rows = (await runner.query('SELECT wallet_create_transfers($1::jsonb) AS result', [
        `[${parameters}]`,
      ])) as { result: { row: { id: string } }[] }[];
      const result = rows[0].result[0];
      const inside = (await runner.query(
        'SELECT resource_id, outcome FROM audit_records WHERE request_id = $1',
        [requestId],
      )) as { resource_id: string; outcome: string }[];
      expect(inside).toEqual([{ resource_id: result.row.id, outcome: 'ACREDITADO' }]);
      await runner.rollbackTransaction();
    } finally {
      await runner.release();
    }
    expect(await recordsOf(requestId)).toEqual([]);
    const [{ n }] = (await t.dataSource.query(
      `SELECT count(*)::int AS n FROM transfers WHERE account_id = $1`,
      [sender.account],
    )) as { n: number }[];
    expect(n).toBe(0);
  });

  it('refuses UPDATE, DELETE and TRUNCATE of audit records (append-only trigger)', async () => {
    const [{ count }] = (await t.dataSource.query('SELECT count(*)::int AS count FROM audit_records')) as {
      count: number;
    }[];
    expect(count).toBeGreaterThan(0);
    await expect(t.dataSource.query(`UPDATE audit_records SET outcome = 'changed'`)).rejects.toThrow(
      /audit records are append-only \(UPDATE on audit_records\)/,
    );
    await expect(t.dataSource.query('DELETE FROM audit_records')).rejects.toThrow(
      /audit records are append-only \(DELETE on audit_records\)/,
    );
    await expect(t.dataSource.query('TRUNCATE audit_records')).rejects.toThrow(
      /audit records are append-only \(TRUNCATE on audit_records\)/,
    );
    const [{ after }] = (await t.dataSource.query('SELECT count(*)::int AS after FROM audit_records')) as {
      after: number;
    }[];
    expect(after).toBe(count);
  });

  describe('GET /v1/audit', () => {
    it("pages the caller's application's records oldest first, by resource and time, never another's", async () => {
      const other = await registerClient(t.app, 'audit-other');
      const otherToken = await accessToken(t.http, other);
      await createOwner(t.http, otherToken, 'USER');
      const user = await newUser();
      for (const firstName of ['Uno', 'Dos', 'Tres']) {
        const response = await request(t.http)
          .patch(`/v1/users/${user}`)
          .set('Authorization', client())
          .send({ firstName });
        expect(response.status).toBe(200);
      }
      const get = (query: Record<string, string | number>, as = client()) =>
        request(t.http).get('/v1/audit').query(query).set('Authorization', as);

      const first = await get({ resource: user, limit: 2 });
      expect(first.status).toBe(200);
      const firstPage = first.body as { resourceId: string; outcome: string; action: string; id: string }[];
      expect(firstPage.map((record) => [record.action, record.outcome])).toEqual([
        ['POST /v1/users', 'created'],
        ['PATCH /v1/users/{uuid}', 'updated'],
      ]);
      const cursor = first.headers['x-next-cursor'] as string;
      expect(typeof cursor).toBe('string');
      const second = await get({ resource: user, after: cursor });
      expect(second.status).toBe(200);
      expect((second.body as { outcome: string }[]).map((record) => record.outcome)).toEqual([
        'updated',
        'updated',
      ]);
      expect(second.headers['x-next-cursor']).toBeUndefined();
      expect(Object.keys(firstPage[0]).sort()).toEqual(
        [
          'action',
          'appId',
          'at',
          'id',
          'outcome',
          'principal',
          'principalType',
          'requestId',
          'resourceId',
          'resourceType',
        ].sort(),
      );

      // Only the caller's application: the other application sees its own records, none of these.
      const others = await get({ limit: 500 }, bearer(otherToken));
      expect(others.status).toBe(200);
      const otherRecords = others.body as { appId: string; resourceId: string }[];
      expect(otherRecords.length).toBeGreaterThan(0);
      expect(otherRecords.every((record) => record.appId === other.appId)).toBe(true);
      expect((await get({ resource: user }, bearer(otherToken))).body).toEqual([]);

      // from/to: a window in the future holds nothing; one around now holds them.
      const future = new Date(Date.now() + 3_600_000).toISOString();
      expect((await get({ resource: user, from: future })).body).toEqual([]);
      expect(((await get({ resource: user, to: future })).body as unknown[]).length).toBe(4);
      // To the microsecond, in any offset: from a record's own instant (inclusive) it comes first; to it
      // (exclusive), only the records before it.
      const rows = (await t.dataSource.query(
        `SELECT id::text AS id, at = lag(at) OVER (ORDER BY at, id) AS same,
                to_char((at AT TIME ZONE 'UTC') - interval '3 hours', 'YYYY-MM-DD"T"HH24:MI:SS.US') || '-03:00' AS local
           FROM audit_records WHERE app_id = $1 AND resource_id = $2 ORDER BY at, id`,
        [app.appId, user],
      )) as { id: string; same: boolean | null; local: string }[];
      const n = rows.findIndex((row) => row.same === false);
      expect(n).toBeGreaterThan(0);
      const ids = (body: unknown) => (body as { id: string }[]).map((record) => record.id);
      expect(ids((await get({ resource: user, from: rows[n].local })).body)).toEqual(
        rows.slice(n).map((row) => row.id),
      );
      expect(ids((await get({ resource: user, to: rows[n].local })).body)).toEqual(
        rows.slice(0, n).map((row) => row.id),
      );
      // [from, to): from = to is an empty window, not a refused one; a to whose text reads earlier (another
      // offset) but that is later is taken.
      const same = await get({ resource: user, from: rows[n].local, to: rows[n].local });
      expect([same.status, same.body]).toEqual([200, []]);
      const shifted = await get({
        resource: user,
        from: '2026-11-25T10:00:00+02:00',
        to: '2026-11-25T09:00:00Z',
      });
      expect([shifted.status, shifted.body]).toEqual([200, []]);

      // A user token is refused (client credentials only).
      const userToken = bearer(await subjectToken(app, user));
      expect((await get({}, userToken)).status).toBe(401);
    });

    it('finds a uuid resource written in any case (decision 0053), as the other routes take uuids', async () => {
      const { user, account } = await funded();
      const get = async (resource: string) => {
        const response = await request(t.http)
          .get('/v1/audit')
          .query({ resource })
          .set('Authorization', client());
        expect(response.status).toBe(200);
        return (response.body as { resourceId: string; outcome: string }[]).map((record) => [
          record.resourceId,
          record.outcome,
        ]);
      };
      const mixed = account.slice(0, 18).toUpperCase() + account.slice(18);
      for (const [resource, given] of [
        [user, user.toUpperCase()],
        [account, account.toUpperCase()],
        [account, mixed],
      ]) {
        const records = await get(resource);
        expect(records.length).toBeGreaterThan(0);
        expect(await get(given)).toEqual(records);
      }
    });

    it("an owner's deletion records the accounts it closed, in the same request", async () => {
      const { user, account } = await funded();
      expect((await request(t.http).delete(`/v1/users/${user}`).set('Authorization', client())).status).toBe(
        204,
      );
      const records = async (resource: string) =>
        (await request(t.http).get('/v1/audit').query({ resource }).set('Authorization', client())).body as {
          action: string;
          outcome: string;
          requestId: string;
        }[];
      const [deleted] = (await records(user)).filter((record) => record.outcome === 'deleted');
      const closed = (await records(account)).filter((record) => record.outcome === 'deleted');
      expect(closed).toEqual([
        expect.objectContaining({ action: 'DELETE /v1/users/{uuid}', requestId: deleted.requestId }),
      ]);
    });

    it('a PATCH that sends the values a user or an account has records unchanged', async () => {
      const { user, account } = await funded();
      const person = (await request(t.http).get(`/v1/users/${user}`).set('Authorization', client())).body as {
        firstName: string;
        lastName: string;
      };
      const samePerson = await request(t.http)
        .patch(`/v1/users/${user}`)
        .set('Authorization', client())
        .send({ firstName: person.firstName, lastName: ` ${person.lastName} ` });
      expect(samePerson.status).toBe(200);
      const userOutcomes = (
        (await request(t.http).get('/v1/audit').query({ resource: user }).set('Authorization', client()))
          .body as { outcome: string }[]
      ).map((record) => record.outcome);
      expect(userOutcomes.at(-1)).toBe('unchanged');
      const current = (
        await request(t.http).get(`/v1/wallet/accounts/${account}`).set('Authorization', client())
      ).body as { alias: string; updated: string };
      const same = [
        ['patch', `/v1/wallet/accounts/${account}/alias`, { newAlias: current.alias }],
        ['patch', `/v1/wallet/accounts/${account}`, { alias: current.alias }],
      ] as const;
      for (const [, path, body] of same) {
        const response = await request(t.http).patch(path).set('Authorization', client()).send(body);
        expect({ path, status: response.status, updated: response.body.updated as unknown }).toEqual({
          path,
          status: 200,
          updated: current.updated,
        });
      }
      const outcomes = async () =>
        (
          (await request(t.http).get('/v1/audit').query({ resource: account }).set('Authorization', client()))
            .body as { outcome: string }[]
        ).map((record) => record.outcome);
      expect((await outcomes()).slice(-2)).toEqual(['unchanged', 'unchanged']);

      // Limits and fees sent as they are stored (NUMERIC 0.100000 against the JSON 0.1): unchanged too, and the
      // account's `updated` stays; a cent more is a change, and so is another fee type.
      const send = async (method: 'post' | 'patch', path: string, body: object) => {
        const url = `/v1/wallet/accounts/${account}${path}`;
        const call = method === 'post' ? request(t.http).post(url) : request(t.http).patch(url);
        const response = await call.set('Authorization', client()).send(body);
        expect({ path, status: response.status }).toEqual({ path, status: 200 });
      };
      const decimals = {
        monthlyWithdrawLimit: 1000.1,
        monthlyDepositLimit: 2000.3,
        annualWithdrawLimit: 12000.5,
        annualDepositLimit: 24000.7,
      };
      await send('patch', '/limits', decimals);
      await send('patch', '/fees', { feeType: 'FIXED', amount: 0.1 });
      expect((await outcomes()).slice(-2)).toEqual(['limits set', 'fees set']);
      const stored = async () => {
        const get = async (path: string) =>
          (await request(t.http).get(`/v1/wallet/accounts/${account}${path}`).set('Authorization', client()))
            .body as Record<string, unknown>;
        const { data } = (await get('/limits')) as { data: Record<string, unknown> };
        return { limits: data, fees: await get('/fees'), updated: (await get('')).updated };
      };
      const before = await stored();
      expect(before.limits).toMatchObject(decimals);
      await send('patch', '/limits', decimals);
      await send('post', '/limits', decimals);
      await send('patch', '/fees', { feeType: 'FIXED', amount: 0.1 });
      expect((await outcomes()).slice(-3)).toEqual(['unchanged', 'unchanged', 'unchanged']);
      expect(await stored()).toEqual(before);

      await send('patch', '/limits', { ...decimals, annualDepositLimit: 24002.41 });
      await send('patch', '/fees', { feeType: 'FIXED', amount: 0.11 });
      await send('patch', '/fees', { feeType: 'PERCENTAGE', amount: 0.11 });
      expect((await outcomes()).slice(-3)).toEqual(['limits set', 'fees set', 'fees set']);
      const after = await stored();
      expect([after.limits.annualDepositLimit, after.fees.feeType, after.fees.amount]).toEqual([
        24002.41,
        'PERCENTAGE',
        0.11,
      ]);
    });

    it('answers 400 with the validation body for a bad from, to or after', async () => {
      for (const [query, path] of [
        [{ from: 'yesterday' }, 'from'],
        [{ to: '2026-13-45T00:00:00Z' }, 'to'],
        // RFC 3339 only, as a statement's period: no offset would mean the server's time zone.
        [{ from: '2026-11-25T10:00:00' }, 'from'],
        [{ to: '2026-11-25' }, 'to'],
        // A window that ends before it starts, as a statement's (it answered 200 []); in any offsets.
        [{ from: '2026-11-25T10:00:00Z', to: '2026-11-25T09:59:59.999999Z' }, 'to'],
        [{ from: '2026-11-25T10:00:00-03:00', to: '2026-11-25T14:00:00+02:00' }, 'to'],
        [{ after: 'not-a-cursor' }, 'after'],
        // A record id past a bigint's range (it answered 500).
        [{ after: Buffer.from('1|9999999999999999999').toString('base64url') }, 'after'],
      ] as const) {
        const response = await request(t.http).get('/v1/audit').query(query).set('Authorization', client());
        expect(response.status).toBe(400);
        expect(response.body).toEqual({
          name: 'ValidationError',
          message: 'Invalid request payload',
          detail: { items: [{ path, message: expect.any(String), type: 'invalid' }] },
        });
      }
    });
  });

  describe('CLI', () => {
    it('records application and key changes as cli:<OS user>, and audit list prints them as JSON', async () => {
      const keyFile = `${t.dataDir}/audit-key.pem`;
      const { writeFileSync } = await import('node:fs');
      const pem = (): string => freshKeyPair().publicPem;
      writeFileSync(keyFile, pem());
      const created = await cliJson<{ appId: string; keyId: string }>(t, [
        'apps',
        'create',
        '--name',
        'audited',
        '--public-key',
        keyFile,
      ]);
      writeFileSync(keyFile, pem());
      const added = await cliJson<{ keyId: string }>(t, [
        'apps',
        'add-key',
        '--app-id',
        created.appId,
        '--public-key',
        keyFile,
      ]);
      await cliJson(t, ['apps', 'revoke-key', '--app-id', created.appId, '--key-id', added.keyId]);
      const rotated = await cliJson<{ kid: string }>(t, ['keys', 'rotate']);

      const listed = await cliJson<{
        items: {
          principalType: string;
          principal: string;
          action: string;
          resourceType: string;
          resourceId: string;
          outcome: string;
          requestId: string | null;
        }[];
        nextCursor: string | null;
      }>(t, ['audit', 'list', '--app', created.appId]);
      const user = userInfo().username;
      expect(
        listed.items.map((record) => ({ ...record, id: undefined, at: undefined, appId: undefined })),
      ).toEqual(
        [
          ['apps create', 'application', created.appId, 'created'],
          ['apps create', 'application_key', created.keyId, 'created'],
          ['apps add-key', 'application_key', added.keyId, 'created'],
          ['apps revoke-key', 'application_key', added.keyId, 'revoked'],
        ].map(([action, resourceType, resourceId, outcome]) => ({
          id: undefined,
          at: undefined,
          appId: undefined,
          principalType: 'cli',
          principal: user,
          action,
          resourceType,
          resourceId,
          outcome,
          requestId: null,
        })),
      );
      expect(listed.nextCursor).toBeNull();

      // A signing key concerns no application: found by its kid.
      const keyRecords = await cliJson<{
        items: { appId: string | null; action: string; outcome: string }[];
      }>(t, ['audit', 'list', '--resource', rotated.kid]);
      expect(keyRecords.items).toEqual([
        expect.objectContaining({ appId: null, action: 'keys rotate', outcome: 'created' }),
      ]);
      // A key id is not a uuid: compared as given (a thumbprint's case matters); a uuid in any case.
      expect(rotated.kid.toUpperCase()).not.toBe(rotated.kid);
      const otherCase = await cliJson<{ items: unknown[] }>(t, [
        'audit',
        'list',
        '--resource',
        rotated.kid.toUpperCase(),
      ]);
      expect(otherCase.items).toEqual([]);
      const byUpperCase = await cliJson<{ items: { resourceId: string; action: string }[] }>(t, [
        'audit',
        'list',
        '--resource',
        created.appId.toUpperCase(),
      ]);
      expect(byUpperCase.items.map((record) => [record.resourceId, record.action])).toEqual([
        [created.appId, 'apps create'],
      ]);

      // Paging: --limit 1 gives a cursor that --after takes.
      const page = await cliJson<{ items: { resourceId: string }[]; nextCursor: string }>(t, [
        'audit',
        'list',
        '--app',
        created.appId,
        '--limit',
        '1',
      ]);
      expect(page.items).toHaveLength(1);
      const next = await cliJson<{ items: { resourceId: string }[] }>(t, [
        'audit',
        'list',
        '--app',
        created.appId,
        '--limit',
        '1',
        '--after',
        page.nextCursor,
      ]);
      expect(next.items[0].resourceId).toBe(created.keyId);

      const bad = await runCli(t, ['audit', 'list', '--from', 'yesterday']);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('from');
    }, 180_000);

    it("records webhooks send-test and replay as cli:<OS user>, for the event's application; a refused replay leaves none", async () => {
      const sent = await cliJson<{ eventId: string }>(t, ['webhooks', 'send-test', '--app-id', app.appId]);
      const records = async () =>
        (await t.dataSource.query(
          `SELECT app_id, principal_type, principal, action, outcome FROM audit_records
            WHERE resource_type = 'webhook_event' AND resource_id = $1 ORDER BY at, id`,
          [sent.eventId],
        )) as AuditRow[];
      const cliRecord = (action: string, outcome: string) => ({
        app_id: app.appId,
        principal_type: 'cli',
        principal: userInfo().username,
        action,
        outcome,
      });
      expect(await records()).toEqual([cliRecord('webhooks send-test', 'created')]);

      // Still pending (no worker here): the replay is refused and leaves no record.
      const refused = await runCli(t, ['webhooks', 'replay', '--event-id', sent.eventId]);
      expect(refused.code).not.toBe(0);
      expect(await records()).toEqual([cliRecord('webhooks send-test', 'created')]);

      await t.dataSource.query(`UPDATE webhook_events SET status = 'failed' WHERE id = $1`, [sent.eventId]);
      // The event's id typed in upper case is recorded as PostgreSQL prints it (found by its resource id).
      await cliJson(t, ['webhooks', 'replay', '--event-id', sent.eventId.toUpperCase()]);
      expect(await records()).toEqual([
        cliRecord('webhooks send-test', 'created'),
        cliRecord('webhooks replay', 'replayed'),
      ]);
    });

    /** `transfers inbound` of `amount` to a new account of the application, through the CLI. */
    const inbound = async (amount: string) =>
      cliJson<{ transferId: string }>(t, [
        'transfers',
        'inbound',
        '--cvu',
        (await funded()).cvu,
        '--amount',
        amount,
        '--from',
        DIRECTORY.nacion.number,
        '--name',
        'Pagador',
        '--cuit',
        DIRECTORY.nacion.cuit,
      ]);

    it('records the inbound deposit (transfers inbound) as cli:<OS user>', async () => {
      const deposit = await inbound('25');
      const rows = (await t.dataSource.query(
        `SELECT app_id, principal_type, principal, action, outcome FROM audit_records WHERE resource_id = $1`,
        [deposit.transferId],
      )) as AuditRow[];
      expect(rows).toEqual([
        {
          app_id: app.appId,
          principal_type: 'cli',
          principal: userInfo().username,
          action: 'transfers inbound',
          outcome: 'ACREDITADO',
        },
      ]);
    });

    it("shows the application an operator's command as cli:operator, never the OS user; audit list keeps the OS user (decision 0082)", async () => {
      const deposit = await inbound('12');
      const sent = await cliJson<{ eventId: string }>(t, ['webhooks', 'send-test', '--app-id', app.appId]);
      const shown = (principal: string) => [
        { principalType: 'cli', principal, action: 'transfers inbound', resourceId: deposit.transferId },
        { principalType: 'cli', principal, action: 'webhooks send-test', resourceId: sent.eventId },
      ];
      const pick = (items: Record<string, unknown>[]) =>
        items
          .filter((item) => item.resourceId === deposit.transferId || item.resourceId === sent.eventId)
          .map(({ principalType, principal, action, resourceId }) => ({
            principalType,
            principal,
            action,
            resourceId,
          }));

      // The application, through GET /v1/audit: the same records, the operator named by role only.
      const seen: Record<string, unknown>[] = [];
      for (const resource of [deposit.transferId, sent.eventId]) {
        const response = await request(t.http)
          .get('/v1/audit')
          .query({ resource })
          .set('Authorization', client());
        expect(response.status).toBe(200);
        seen.push(...(response.body as Record<string, unknown>[]));
      }
      expect(pick(seen)).toEqual(shown('operator'));
      expect(seen.map((item) => Object.keys(item).sort())).toEqual(
        seen.map(() =>
          [
            'id',
            'at',
            'appId',
            'principalType',
            'principal',
            'action',
            'resourceType',
            'resourceId',
            'outcome',
            'requestId',
          ].sort(),
        ),
      );

      // The operator, through audit list: the OS user who ran each command, as stored.
      const listed = await cliJson<{ items: Record<string, unknown>[] }>(t, [
        'audit',
        'list',
        '--app',
        app.appId,
        '--from',
        seen[0].at as string,
      ]);
      expect(pick(listed.items)).toEqual(shown(userInfo().username));
      expect(
        await t.dataSource.query(
          `SELECT principal FROM audit_records WHERE resource_id = ANY ($1::text[]) ORDER BY at, id`,
          [[deposit.transferId, sent.eventId]],
        ),
      ).toEqual([{ principal: userInfo().username }, { principal: userInfo().username }]);
    });

    it('audit list without --app reads an index in the list order: a page, not the whole trail', async () => {
      // 90,000 records of 20 applications, one a second up to now; one resource has 30 of them, two in the last hour.
      const resource = randomUUID();
      await t.dataSource.query(
        `INSERT INTO audit_records (at, app_id, principal_type, principal, action, resource_type, resource_id,
                                    outcome, request_id)
         SELECT now() - make_interval(secs => 90000 - i), md5('audit app ' || (i % 20))::uuid, 'client', 'bulk',
                'POST /v1/wallet/transactions', 'transfer',
                CASE WHEN i % 3000 = 0 THEN $1 ELSE md5('audit resource ' || i)::uuid::text END, 'ACREDITADO', NULL
           FROM generate_series(1, 90000) AS i`,
        [resource],
      );
      await t.dataSource.query('VACUUM ANALYZE audit_records');
      const [middle] = (await t.dataSource.query(
        `SELECT (extract(epoch FROM at) * 1000000)::bigint::text AS micros, id::text AS id
           FROM audit_records ORDER BY at, id OFFSET 45000 LIMIT 1`,
      )) as { micros: string; id: string }[];
      const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
      // AuditService.list's statement for each case (no application): its conditions, ORDER BY at, id LIMIT $1.
      const cases: [string, string, unknown[]][] = [
        ['every application', '', []],
        [
          'after a cursor',
          `WHERE (at, id) > ('epoch'::timestamptz + $2::bigint * interval '1 microsecond', $3::bigint)`,
          [middle.micros, middle.id],
        ],
        ['from an hour ago', 'WHERE at >= $2', [hourAgo]],
        ['a resource', 'WHERE resource_id = $2', [resource]],
        ['a resource from an hour ago', 'WHERE resource_id = $2 AND at >= $3', [resource, hourAgo]],
      ];
      const plans: Record<string, { seqScan: boolean; indexes: string[]; sorted: number; read: number }> = {};
      for (const [label, where, values] of cases) {
        const [{ 'QUERY PLAN': plan }] = (await t.dataSource.query(
          `EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM audit_records ${where} ORDER BY at, id LIMIT $1`,
          [101, ...values],
        )) as { 'QUERY PLAN': { Plan: PlanNode }[] }[];
        const nodes = flattenPlan(plan[0].Plan);
        plans[label] = {
          seqScan: nodes.some((node) => node['Node Type'].includes('Seq Scan')),
          indexes: [...new Set(nodes.flatMap((node) => node['Index Name'] ?? []))],
          // Rows that went into a sort: none when the index gives the order.
          sorted: nodes
            .filter((node) => node['Node Type'] === 'Sort')
            .reduce((sum, node) => sum + (node.Plans?.[0]['Actual Rows'] ?? 0), 0),
          read: rowsRead(nodes, 'audit_records'),
        };
      }
      const page = { seqScan: false, indexes: ['idx_audit_records_at'], sorted: 0 };
      expect(plans).toEqual({
        'every application': { ...page, read: 101 },
        'after a cursor': { ...page, read: 101 },
        'from an hour ago': { ...page, read: 101 },
        // One resource: the (app_id, resource_id, at, id) index read with a skip scan over the applications, its
        // records sorted (30 here, bounded by that resource's history, not by the trail).
        'a resource': { seqScan: false, indexes: ['idx_audit_records_app_resource'], sorted: 30, read: 30 },
        'a resource from an hour ago': {
          seqScan: false,
          indexes: ['idx_audit_records_app_resource'],
          sorted: 2,
          read: 2,
        },
      });

      // And the CLI lists what these plans read: the first page of every application's records.
      const listed = await cliJson<{ items: { id: string }[] }>(t, ['audit', 'list', '--limit', '3']);
      const first = (await t.dataSource.query(
        'SELECT id::text AS id FROM audit_records ORDER BY at, id LIMIT 3',
      )) as { id: string }[];
      expect(listed.items.map((record) => record.id)).toEqual(first.map((row) => row.id));
    }, 120_000);
  });

  describe('signing keys: the key file is the truth, the trail catches up (SigningKeyAuditService)', () => {
    const keyRecords = async (kid: string) =>
      (await t.dataSource.query(
        `SELECT app_id, principal_type, principal, action, outcome FROM audit_records
          WHERE resource_type = 'signing_key' AND resource_id = $1 ORDER BY at, id`,
        [kid],
      )) as Pick<AuditRow, 'app_id' | 'principal_type' | 'principal' | 'action' | 'outcome'>[];
    const bySystem = (outcome: string) => ({
      app_id: null,
      principal_type: 'system',
      principal: 'signing-keys',
      action: 'reconcile',
      outcome,
    });

    it('the API records, at its start, the key it generated in development', async () => {
      const history = await t.app.get(SigningKeysService).history();
      expect(history.length).toBeGreaterThan(0);
      expect(await keyRecords(history[0].kid)).toEqual([bySystem('created')]);
    });

    it('a change whose record was lost (a crash after the file was written) is recorded once, by the next catch-up', async () => {
      const keys = t.app.get(SigningKeysService);
      const trail = t.app.get(SigningKeyAuditService);
      // The file changes with no record, as when a command dies between the two.
      const lost = await keys.rotate();
      expect(await keyRecords(lost.kid)).toEqual([]);
      expect(await trail.reconcile()).toBe(1);
      expect(await trail.reconcile()).toBe(0);
      expect(await keyRecords(lost.kid)).toEqual([bySystem('created')]);

      // A lost retirement as well; and a command catches up before its own change, which it records as itself.
      await keys.rotate(); // the current key cannot be retired: another first (also lost, also caught up)
      await keys.retire(lost.kid);
      const rotated = await cliJson<{ kid: string }>(t, ['keys', 'rotate']);
      expect(await keyRecords(lost.kid)).toEqual([bySystem('created'), bySystem('retired')]);
      expect(await keyRecords(rotated.kid)).toEqual([
        {
          app_id: null,
          principal_type: 'cli',
          principal: userInfo().username,
          action: 'keys rotate',
          outcome: 'created',
        },
      ]);
      expect(await trail.reconcile()).toBe(0);
    });

    it('a catch-up waits for a change in progress, so nothing is recorded twice', async () => {
      const keys = t.app.get(SigningKeysService);
      const trail = t.app.get(SigningKeyAuditService);
      let written!: (kid: string) => void;
      const fileWritten = new Promise<string>((resolve) => (written = resolve));
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const change = trail.change(
        { appId: null, actor: 'cli:test', action: 'keys rotate', requestId: null },
        async () => {
          const rotated = await keys.rotate();
          written(rotated.kid);
          await gate; // the file holds the key; its record is not committed yet
          return rotated;
        },
        ({ kid }) => ({ resourceType: 'signing_key', resourceId: kid, outcome: 'created' }),
      );
      const kid = await fileWritten;
      let caughtUp = false;
      const catchUp = trail.reconcile().then((count) => {
        caughtUp = true;
        return count;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(caughtUp).toBe(false); // waiting for the change's lock
      release();
      await change;
      expect(await catchUp).toBe(0);
      expect(await keyRecords(kid)).toEqual([
        { app_id: null, principal_type: 'cli', principal: 'test', action: 'keys rotate', outcome: 'created' },
      ]);
    });
  });

  it('documents, in the OpenAPI description of outcome, every outcome the cases above left', async () => {
    const schema = document.components?.schemas?.AuditRecord as {
      properties: Record<string, { description?: string }>;
    };
    const description = schema.properties.outcome.description ?? '';
    const documented = new Set([...description.matchAll(/`([^`]+)`/g)].map((match) => match[1]));
    for (const step of KYC_STEPS) expect(description).toContain(step);
    const written = (
      (await t.dataSource.query('SELECT DISTINCT outcome FROM audit_records ORDER BY outcome')) as {
        outcome: string;
      }[]
    ).map((row) => row.outcome);
    // The suite's cases reach every kind: a KYC step's submission and verdict, a transfer's states, each change.
    expect(written).toEqual(
      expect.arrayContaining(['limits set', 'fees set', 'balance set', 'revoked', 'retired', 'replayed']),
    );
    const asDocumented = (outcome: string) =>
      KYC_STEPS.reduce((text, step) => text.replace(new RegExp(`\\b${step}\\b`), '<STEP>'), outcome);
    expect(written.filter((outcome) => !documented.has(asDocumented(outcome)))).toEqual([]);
  });
});
