import { jest } from '@jest/globals';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { QUEUES } from '../src/common/queue/queue-names.js';
import { RouteCatalog } from '../src/common/http/route-catalog.js';
import { serverPath } from './support/openapi.js';
import { startTestApp, TEST_BASE_URL, type TestApp } from './support/test-app.js';

const METRICS_TOKEN = 'operator-token-for-tests';

describe('operations: health, metrics, queue dashboard, OpenAPI', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_TOKEN } });
  });
  afterAll(() => t.close());

  it('GET /v1/health/live answers without credentials', async () => {
    const response = await request(t.http).get('/v1/health/live');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok' });
  });

  it('GET /v1/health/ready checks the database and the queue backend in use', async () => {
    const response = await request(t.http).get('/v1/health/ready');
    expect(response.status).toBe(200);
    const queueCheck = process.env.TEST_REDIS_URL ? 'redis' : 'queue';
    expect(response.body).toEqual({
      status: 'ok',
      checks: {
        database: { status: 'up', latencyMs: expect.any(Number) },
        [queueCheck]: { status: 'up', latencyMs: expect.any(Number) },
      },
    });
  });

  it('GET /v1/health/ready checks at most once a second, and requests meanwhile share its answer (decision 0073)', async () => {
    const dataSource = t.app.get(DataSource);
    const query = jest.spyOn(dataSource, 'query'); // calls through: the real database answers
    try {
      const checks = () => query.mock.calls.filter(([sql]) => sql === 'SELECT 1').length;
      await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the previous test's answer
      // Checks start at least a second apart, so a burst that spans `spanMs` can start at most
      // 1 + spanMs / 1000 of them: one on a machine that answers it within a second, and never one per request.
      const started = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => request(t.http).get('/v1/health/ready')),
      );
      const spanMs = Date.now() - started;
      expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
      const burstChecks = checks();
      expect(burstChecks).toBeGreaterThanOrEqual(1);
      expect(burstChecks).toBeLessThanOrEqual(1 + Math.floor(spanMs / 1_000));
      // Each answer is the answer of one of those checks.
      const bodies = new Set(answers.map((answer) => JSON.stringify(answer.body)));
      expect(bodies.size).toBeLessThanOrEqual(burstChecks);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect((await request(t.http).get('/v1/health/ready')).status).toBe(200);
      expect(checks()).toBe(burstChecks + 1);
    } finally {
      query.mockRestore();
    }
  });

  it('/v1/metrics needs the operator token', async () => {
    expect((await request(t.http).get('/v1/metrics')).status).toBe(401);
    expect(
      (await request(t.http).get('/v1/metrics').set('Authorization', 'Bearer wrong-token-for-tests!!'))
        .status,
    ).toBe(401);
    // The scheme in any case (RFC 7235), as the API's bearer tokens.
    expect(
      (await request(t.http).get('/v1/metrics').set('Authorization', `bearer  ${METRICS_TOKEN}`)).status,
    ).toBe(200);
    const response = await request(t.http).get('/v1/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.text).toContain('http_request_duration_seconds');
    expect(response.text).toMatch(/webhook_events\{status="pending"\} \d+/);
    expect(response.text).toMatch(/webhook_queue_jobs\{state="waiting"\} \d+/);
    expect(response.text).toContain('process_cpu_seconds_total');
  });

  it('/v1/metrics is refused to everyone when METRICS_TOKEN is not configured', async () => {
    const other = await startTestApp();
    try {
      expect((await request(other.http).get('/v1/metrics').set('Authorization', 'Bearer ')).status).toBe(401);
      expect((await request(other.http).get('/v1/queues/')).status).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('the queue dashboard is behind the same token (bearer or basic password)', async () => {
    expect((await request(t.http).get('/v1/queues/api/queues')).status).toBe(401);
    const bearer = await request(t.http)
      .get('/v1/queues/api/queues')
      .set('Authorization', `Bearer ${METRICS_TOKEN}`);
    expect(bearer.status).toBe(200);
    const names = (bearer.body as { queues: { name: string }[] }).queues.map((queue) => queue.name).sort();
    expect(names).toEqual(Object.values(QUEUES).sort()); // every queue of src/common/queue/queue-names.ts
    const basic = await request(t.http).get('/v1/queues/').auth('operator', METRICS_TOKEN);
    expect(basic.status).toBe(200);
    expect(basic.headers['content-type']).toMatch(/text\/html/);
  });

  it('serves the OpenAPI document with both schemes as the interface declares them', async () => {
    const response = await request(t.http).get('/v1/openapi.json');
    expect(response.status).toBe(200);
    const document = response.body as {
      openapi: string;
      servers: { url: string }[];
      info: { version: string };
      components: { securitySchemes: Record<string, unknown> };
      paths: Record<
        string,
        Record<
          string,
          {
            security?: Record<string, string[]>[];
            parameters?: { name: string; in: string; required?: boolean; schema?: { format?: string } }[];
            responses?: Record<string, { headers?: Record<string, unknown> }>;
          }
        >
      >;
    };
    expect(document.info.version).toBe('1.0.0');
    expect(document.components.securitySchemes.OAuth2ClientCredentials).toEqual({
      type: 'oauth2',
      flows: { clientCredentials: { tokenUrl: `${TEST_BASE_URL}oauth/token`, scopes: {} } },
      description: expect.stringContaining('private_key_jwt'),
    });
    expect(document.components.securitySchemes.BearerAuth).toEqual({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: expect.stringContaining('`sub` = the user'),
    });
    // Paths are relative to the server, {base_url}.
    expect(document.servers).toEqual([{ url: TEST_BASE_URL.replace(/\/$/, ''), description: '{base_url}' }]);
    const base = serverPath(document);
    // Every documented operation declares exactly the schemes its policy accepts.
    const expected: Record<string, string[][]> = {
      either: [['OAuth2ClientCredentials'], ['BearerAuth']],
      cc: [['OAuth2ClientCredentials']],
      public: [],
    };
    for (const route of t.app.get(RouteCatalog).all()) {
      const operation =
        document.paths[route.path.slice(base.length).replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[
          route.method.toLowerCase()
        ];
      if (route.policy === 'ops') {
        expect(operation).toBeUndefined(); // metrics are not part of the public document
        continue;
      }
      expect(operation).toBeDefined();
      // Idempotency-Key is one optional header of the two money POSTs and of the SMS (a second, required one came
      // from @Headers).
      const keyed =
        route.method === 'POST' &&
        (route.path.endsWith('/wallet/transactions') ||
          route.path.endsWith('/reversals') ||
          route.path.endsWith('/mobile/sms'));
      const keys = (operation.parameters ?? []).filter(
        (parameter) => parameter.in === 'header' && parameter.name.toLowerCase() === 'idempotency-key',
      );
      expect({
        route: `${route.method} ${route.path}`,
        required: keys.map((key) => key.required ?? false),
      }).toEqual({
        route: `${route.method} ${route.path}`,
        required: keyed ? [false] : [],
      });
      // A {uuid} is a uuid; a list that takes a cursor says where the next page's comes from.
      const label = `${route.method} ${route.path}`;
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'path' && parameter.name === 'uuid')
          expect({ label, format: parameter.schema?.format }).toEqual({ label, format: 'uuid' });
      }
      if (
        operation.parameters?.some((parameter) => parameter.in === 'query' && parameter.name === 'cursor')
      ) {
        expect({ label, headers: Object.keys(operation.responses?.['200']?.headers ?? {}) }).toEqual({
          label,
          headers: expect.arrayContaining(['X-Next-Cursor']),
        });
      }
      const schemes = (operation.security ?? []).map((requirement) => Object.keys(requirement)).sort();
      expect({ route: `${route.method} ${route.path}`, schemes }).toEqual({
        route: `${route.method} ${route.path}`,
        schemes: [...expected[route.policy!]].sort(),
      });
    }
  });

  it('serialises each OpenAPI document once: later requests get the same bytes without serialising again', async () => {
    const first = {
      json: await request(t.http).get('/v1/openapi.json'),
      yaml: await request(t.http).get('/v1/openapi.yaml'),
    };
    expect(first.json.status).toBe(200);
    expect(first.yaml.status).toBe(200);
    expect(first.yaml.headers['content-type']).toBe('text/yaml; charset=utf-8');
    expect(first.yaml.text).toContain('openapi: 3.');
    // A serialiser that ran again would show this change; the document does not change while the process runs.
    const info = t.openApi.info;
    const title = info.title;
    info.title = 'changed after the first answer';
    try {
      // The paths Express routes to the same handler (any case, a trailing slash) get the kept answer too.
      for (const path of [
        '/v1/openapi.json',
        '/v1/openapi.yaml',
        '/v1/openapi.yaml/',
        '/v1/OPENAPI.JSON',
        '/v1/OpenAPI.yaml/',
      ]) {
        const again = await request(t.http).get(path);
        const before = path.toLowerCase().includes('json') ? first.json : first.yaml;
        expect(again.status).toBe(200);
        expect(again.headers['content-type']).toBe(before.headers['content-type']);
        expect(again.text).toBe(before.text);
        expect(again.text).not.toContain('changed after the first answer');
        expect((await request(t.http).head(path)).headers['content-length']).toBe(
          before.headers['content-length'],
        );
      }
    } finally {
      info.title = title;
    }
  });

  it("the embedded server's log, which LOG_LEVEL=debug passes on, carries no row values and no statements", async () => {
    // The test server is started by the same code as the service's embedded one (startServer).
    const settings = (await t.dataSource.query(
      `SELECT name, setting FROM pg_settings WHERE name IN ('log_error_verbosity', 'log_min_error_statement') ORDER BY name`,
    )) as { name: string; setting: string }[];
    expect(settings).toEqual([
      { name: 'log_error_verbosity', setting: 'terse' }, // no DETAIL: a unique violation's quotes the row
      { name: 'log_min_error_statement', setting: 'panic' }, // no STATEMENT lines
    ]);
  });

  it('serves the interactive documentation page', async () => {
    const response = await request(t.http).get('/v1/docs');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/text\/html/);
    expect(response.text).toContain('swagger');
  });
});
