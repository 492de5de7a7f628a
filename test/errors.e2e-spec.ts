import { connect, type AddressInfo } from 'node:net';
import request from 'supertest';
import { accessToken, registerClient } from './support/auth.js';
import { FixtureModule } from './support/fixture.module.js';
import { expectValidation as expectValidationBody, type ValidationItem } from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** A body that passes every rule of the fixture's EchoDto. */
const validEcho = () => ({
  name: 'Ada',
  count: 2,
  kind: 'a',
  address: { streetName: 'Main Street', zipCode: '12345' },
});

describe('error bodies through HTTP', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ extraModules: [FixtureModule] });
    token = await accessToken(t.http, await registerClient(t.app));
  });
  afterAll(() => t.close());

  const echo = (body: unknown) =>
    request(t.http)
      .post('/v1/test-fixtures/echo')
      .set('Authorization', `Bearer ${token}`)
      .send(body as object);

  const rawEcho = (contentType: string, text: string) =>
    request(t.http)
      .post('/v1/test-fixtures/echo')
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', contentType)
      .send(text);

  /** Asserts the validation error body (support/identity's), sent as JSON with a message in each item; its items. */
  const expectValidation = (response: request.Response): ValidationItem[] => {
    const items = expectValidationBody(response);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    for (const item of items) expect(item.message.length).toBeGreaterThan(0);
    // The handler never ran: there is no echo of the body or of the principal.
    expect(response.body).not.toHaveProperty('body');
    expect(response.body).not.toHaveProperty('principal');
    return items;
  };

  const byPath = (items: ValidationItem[]) => Object.fromEntries(items.map((item) => [item.path, item.type]));

  describe('control', () => {
    it('a valid body reaches the handler', async () => {
      const response = await echo(validEcho());
      expect(response.status).toBe(200);
      expect(response.body.body).toEqual(validEcho());
      expect(response.body.principal).toMatchObject({ kind: 'client' });
    });
  });

  describe('400 validation', () => {
    it('names every missing required field with type required', async () => {
      const items = expectValidation(await echo({}));
      expect(byPath(items)).toEqual(
        expect.objectContaining({
          name: 'required',
          count: 'required',
          kind: 'required',
          address: 'required',
        }),
      );
      expect(items.find((item) => item.path === 'note')).toBeUndefined();
      const nested = expectValidation(await echo({ ...validEcho(), address: {} }));
      expect(byPath(nested)).toEqual({ 'address.streetName': 'required', 'address.zipCode': 'required' });
    });

    it('treats null as missing', async () => {
      const items = expectValidation(await echo({ ...validEcho(), name: null }));
      expect(items).toEqual([{ path: 'name', message: expect.any(String), type: 'required' }]);
    });

    it('names wrong types with type invalid', async () => {
      const items = expectValidation(
        await echo({ ...validEcho(), name: 42, count: '2', kind: 'c', note: { nested: true } }),
      );
      expect(byPath(items)).toEqual({ name: 'invalid', count: 'invalid', kind: 'invalid', note: 'invalid' });
    });

    it('refuses a count below the minimum and a non-integer count', async () => {
      expect(byPath(expectValidation(await echo({ ...validEcho(), count: 0 })))).toEqual({
        count: 'invalid',
      });
      expect(byPath(expectValidation(await echo({ ...validEcho(), count: 1.5 })))).toEqual({
        count: 'invalid',
      });
    });

    it('uses the nested body path for nested fields', async () => {
      const items = expectValidation(
        await echo({ ...validEcho(), address: { streetName: 'Main Street', zipCode: '1' } }),
      );
      expect(items).toEqual([{ path: 'address.zipCode', message: expect.any(String), type: 'invalid' }]);

      const missing = expectValidation(await echo({ ...validEcho(), address: { zipCode: '12345' } }));
      expect(missing).toEqual([
        { path: 'address.streetName', message: expect.any(String), type: 'required' },
      ]);
    });

    it('refuses a nested object that is not an object', async () => {
      const items = expectValidation(await echo({ ...validEcho(), address: 'Main Street 1' }));
      expect(items.map((item) => item.path)).toContain('address');
      expect(byPath(items).address).toBe('invalid');
    });

    it('refuses an unknown property at the top level', async () => {
      const items = expectValidation(await echo({ ...validEcho(), isAdmin: true }));
      expect(items).toEqual([
        { path: 'isAdmin', message: expect.stringContaining('isAdmin'), type: 'invalid' },
      ]);
    });

    it('refuses an unknown property in a nested object', async () => {
      const items = expectValidation(
        await echo({ ...validEcho(), address: { streetName: 'Main Street', zipCode: '12345', floor: 3 } }),
      );
      expect(items).toEqual([
        { path: 'address.floor', message: expect.stringContaining('floor'), type: 'invalid' },
      ]);
    });

    it('refuses malformed JSON', async () => {
      const items = expectValidation(await rawEcho('application/json', '{"name": "Ada",'));
      expect(items).toEqual([{ path: '', message: expect.any(String), type: 'invalid' }]);
    });

    it('refuses malformed JSON before authentication', async () => {
      const response = await request(t.http)
        .post('/v1/test-fixtures/echo')
        .set('Content-Type', 'application/json')
        .send('{not json');
      expect(expectValidation(response)).toEqual([
        { path: '', message: expect.any(String), type: 'invalid' },
      ]);
    });

    it('refuses a multipart body on a route that takes JSON, as any body that is not JSON (decision 0100)', async () => {
      const response = await request(t.http)
        .post('/v1/test-fixtures/echo')
        .set('Authorization', `Bearer ${token}`)
        .field('name', 'x');
      expect(expectValidation(response)).toEqual([
        { path: '', message: 'Content-Type must be application/json', type: 'invalid' },
      ]);
    });

    it('reads the body of a request line in absolute form (RFC 9112 §3.2.2) as that of its path (decision 0100)', async () => {
      const server = t.http.listening ? t.http : t.http.listen(0, '127.0.0.1');
      if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const body = 'hello';
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let text = '';
        socket.on('data', (chunk) => (text += chunk.toString('utf8')));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
        socket.write(
          `POST http://127.0.0.1:${port}/v1/test-fixtures/echo HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
            `Authorization: Bearer ${token}\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n` +
            `Connection: close\r\n\r\n${body}`,
        );
      });
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
        name: 'ValidationError',
        message: expect.any(String),
        detail: { items: [{ path: '', message: 'Content-Type must be application/json', type: 'invalid' }] },
      });
    });

    it('refuses a body that is not JSON (text/plain)', async () => {
      const items = expectValidation(await rawEcho('text/plain', JSON.stringify(validEcho())));
      expect(items).toEqual([
        { path: '', message: expect.stringContaining('application/json'), type: 'invalid' },
      ]);
    });

    it('refuses a form-encoded body', async () => {
      const items = expectValidation(await rawEcho('application/x-www-form-urlencoded', 'name=Ada&count=2'));
      expect(items).toEqual([{ path: '', message: expect.any(String), type: 'invalid' }]);
    });

    it('refuses a JSON array as the body', async () => {
      const items = expectValidation(await rawEcho('application/json', JSON.stringify([validEcho()])));
      expect(items).toEqual([{ path: '', message: expect.any(String), type: 'invalid' }]);
    });

    it('refuses a JSON string as the body', async () => {
      const items = expectValidation(await rawEcho('application/json', '"Ada"'));
      expect(items).toEqual([{ path: '', message: expect.any(String), type: 'invalid' }]);
    });

    it('refuses a JSON null or number as the body', async () => {
      expect(expectValidation(await rawEcho('application/json', 'null'))).toEqual([
        { path: '', message: expect.any(String), type: 'invalid' },
      ]);
      expect(expectValidation(await rawEcho('application/json', '42'))).toEqual([
        { path: '', message: expect.any(String), type: 'invalid' },
      ]);
    });

    it('reports a duplicate with type duplicate', async () => {
      const response = await request(t.http).get('/v1/test-fixtures/duplicate');
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        name: 'ValidationError',
        message: expect.any(String),
        detail: { items: [{ path: 'taxId', message: 'taxId is already registered', type: 'duplicate' }] },
      });
    });
  });

  describe('input PostgreSQL would refuse is a 400, never a 500 (decision 0053)', () => {
    const get = (path: string) => request(t.http).get(path).set('Authorization', `Bearer ${token}`);
    const b64 = (text: string) => Buffer.from(text).toString('base64url');
    const zeros = '0'.repeat(36);

    it('a list cursor that is not exactly what the service wrote', async () => {
      const badCursors = [
        b64(`2024-01-01T00:00:00Z|${zeros}`), // uuid-shaped, not a uuid
        b64('-100000-01-01T00:00:00.000Z|00000000-0000-0000-0000-000000000000'), // before PostgreSQL's range
        b64('2024-01-01T00:00:00.000Z|00000000-0000-0000-0000-000000000000|x'),
      ];
      for (const path of ['/v1/users/all', '/v1/companies/all', '/v1/wallet/transactions/all']) {
        for (const cursor of badCursors) {
          const items = expectValidation(await get(`${path}?cursor=${cursor}`));
          expect({ path, items }).toEqual({ path, items: [expect.objectContaining({ path: 'cursor' })] });
        }
      }
      for (const param of ['cursor', 'after']) {
        const items = expectValidation(await get(`/v1/events?${param}=${b64(`1|${zeros}`)}`));
        expect(items).toEqual([expect.objectContaining({ path: param })]);
      }
      const statement = expectValidation(
        await get(
          `/v1/wallet/accounts/${'1'.repeat(8)}-1111-4111-8111-${'1'.repeat(12)}/statement?cursor=${b64('2024-02-30T00:00:00Z|1')}`,
        ),
      );
      expect(statement).toEqual([expect.objectContaining({ path: 'cursor' })]);
    });

    it('an offset beyond ±15:59', async () => {
      const items = expectValidation(await get('/v1/audit?from=2024-01-01T00:00:00%2B16:00'));
      expect(items).toEqual([expect.objectContaining({ path: 'from' })]);
      expect((await get('/v1/audit?from=2024-01-01T00:00:00%2B15:59')).status).toBe(200);
    });

    it('a NUL character, or a name of Object.prototype, in a query string', async () => {
      expect(expectValidation(await get('/v1/audit?resource=a%00b'))).toEqual([
        { path: '', message: 'strings must not contain NUL characters', type: 'invalid' },
      ]);
      for (const key of ['toString', 'hasOwnProperty', '__proto__', 'constructor'])
        expect({ key, status: (await get(`/v1/users/all?${key}=1`)).status }).toEqual({ key, status: 400 });
    });

    it('a body property named like an Object.prototype member (class-transformer dropped it without a word)', async () => {
      for (const key of ['toString', 'hasOwnProperty', 'valueOf']) {
        const items = expectValidation(await echo({ ...validEcho(), [key]: 'x' }));
        expect(items).toEqual([{ path: key, message: `property ${key} is not allowed`, type: 'invalid' }]);
      }
    });

    it('a path id that is not a uuid is an item at the parameter, not at the body (path "")', async () => {
      for (const path of ['/v1/users/not-a-uuid', '/v1/wallet/accounts/1234/balance', '/v1/events/x'])
        expect({ path, items: expectValidation(await get(path)) }).toEqual({
          path,
          items: [{ path: 'uuid', message: 'uuid must be a uuid', type: 'invalid' }],
        });
    });

    it('a compressed body that does not decompress, before authentication', async () => {
      const response = await request(t.http)
        .post('/v1/test-fixtures/echo')
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'gzip')
        .send('{"not":"gzip"}');
      expect(expectValidation(response)).toEqual([
        { path: '', message: 'the request body could not be read', type: 'invalid' },
      ]);
    });
  });

  describe('404 not found', () => {
    it('answers an unknown route with the not found body', async () => {
      const response = await request(t.http).get('/v1/no-such-route');
      expect(response.status).toBe(404);
      expect(response.body).toEqual({
        name: 'NotFoundError',
        message: expect.any(String),
        detail: { item: '/v1/no-such-route' },
      });
    });

    it('answers a path outside /v1/ with the same body and a request id', async () => {
      const response = await request(t.http).get('/nothing-here');
      expect(response.status).toBe(404);
      expect(response.headers['x-request-id']).toEqual(expect.any(String));
      expect(response.body).toEqual({
        name: 'NotFoundError',
        message: expect.any(String),
        detail: { item: '/nothing-here' },
      });
    });

    it('answers an unknown method on a known path with the not found body', async () => {
      const response = await request(t.http)
        .delete('/v1/test-fixtures/cc-only?x=1')
        .set('Authorization', `Bearer ${token}`);
      expect(response.status).toBe(404);
      expect(response.body).toEqual({
        name: 'NotFoundError',
        message: expect.any(String),
        detail: { item: '/v1/test-fixtures/cc-only' },
      });
    });

    it('answers 404 to a body sent where no route is, whatever the body (decision 0100)', async () => {
      const sends = [
        request(t.http).post('/v1/no-such-route').set('Content-Type', 'text/plain').send('hello'),
        request(t.http).post('/v1/no-such-route').set('Content-Type', 'application/json').send('[1]'),
        request(t.http).post('/v1/no-such-route').set('Content-Type', 'application/json').send('{'),
        request(t.http).put('/v1/test-fixtures/echo').set('Content-Type', 'text/plain').send('x'),
      ];
      for (const response of await Promise.all(sends)) {
        expect({ status: response.status, name: response.body.name }).toEqual({
          status: 404,
          name: 'NotFoundError',
        });
      }
    });

    it('answers an unknown resource with the not found body naming it', async () => {
      const uuid = '0b8f3c1e-8a52-4f5e-9d7c-1a2b3c4d5e6f';
      const response = await request(t.http)
        .get(`/v1/test-fixtures/resources/${uuid}`)
        .set('Authorization', `Bearer ${token}`);
      expect(response.status).toBe(404);
      expect(response.body).toEqual({
        name: 'NotFoundError',
        message: 'Resource not found',
        detail: { item: uuid },
      });
    });
  });

  describe('401 unauthorized', () => {
    it('has exactly name and message, no detail', async () => {
      const response = await request(t.http).post('/v1/test-fixtures/echo').send(validEcho());
      expect(response.status).toBe(401);
      expect(response.body).toStrictEqual({ name: 'UnauthorizedError', message: expect.any(String) });
      expect(Object.keys(response.body as object).sort()).toEqual(['message', 'name']);
    });

    it('checks credentials before the body: an invalid body without credentials is 401', async () => {
      const response = await request(t.http).post('/v1/test-fixtures/echo').send({});
      expect(response.status).toBe(401);
      expect(response.body).toStrictEqual({ name: 'UnauthorizedError', message: expect.any(String) });
    });
  });

  describe('403 forbidden', () => {
    it('carries the reason', async () => {
      const response = await request(t.http).get('/v1/test-fixtures/forbidden');
      expect(response.status).toBe(403);
      expect(response.body).toEqual({
        name: 'ForbiddenError',
        message: 'The resource is in a state that does not allow this',
        detail: { reason: 'INVALID_STATE' },
      });
    });
  });

  describe('500 internal server error', () => {
    it('carries the request id as trackingId and nothing of the thrown error', async () => {
      const response = await request(t.http).get('/v1/test-fixtures/crash');
      expect(response.status).toBe(500);
      const requestId = response.headers['x-request-id'];
      expect(requestId).toEqual(expect.any(String));
      expect(requestId.length).toBeGreaterThan(0);
      expect(response.body).toEqual({
        name: 'InternalServerError',
        message: expect.any(String),
        detail: { trackingId: requestId },
      });
      expect(response.text).not.toContain('secret_table');
      expect(response.text).not.toContain('relation');
      expect(response.text).not.toContain('character 42');
      expect(response.text).not.toMatch(/\bat .*\.(ts|js):\d+/);
      expect(response.text).not.toContain('stack');
    });

    it('uses the caller’s well-formed X-Request-Id as trackingId', async () => {
      const response = await request(t.http)
        .get('/v1/test-fixtures/crash')
        .set('X-Request-Id', 'trace-0001.a_b');
      expect(response.status).toBe(500);
      expect(response.headers['x-request-id']).toBe('trace-0001.a_b');
      expect(response.body.detail).toEqual({ trackingId: 'trace-0001.a_b' });
    });
  });

  describe('413 payload too large', () => {
    it('refuses a body over the default BODY_LIMIT (100kb)', async () => {
      const response = await echo({ ...validEcho(), note: 'x'.repeat(101 * 1024) });
      expect(response.status).toBe(413);
      expect(response.body).toStrictEqual({ name: 'PayloadTooLargeError', message: expect.any(String) });
    });

    it('accepts a body just under the default limit', async () => {
      const response = await echo({ ...validEcho(), note: 'x'.repeat(90 * 1024) });
      expect(response.status).toBe(200);
      expect((response.body.body as { note: string }).note).toHaveLength(90 * 1024);
    });

    it('refuses an oversized body before authentication', async () => {
      const response = await request(t.http)
        .post('/v1/test-fixtures/echo')
        .send({ ...validEcho(), note: 'x'.repeat(200 * 1024) });
      expect(response.status).toBe(413);
      expect(response.body).toStrictEqual({ name: 'PayloadTooLargeError', message: expect.any(String) });
    });
  });

  describe('text error style (SMS and SIM swap routes)', () => {
    it('answers an invalid body with NO ROUTES as text/html', async () => {
      const response = await request(t.http).post('/v1/test-fixtures/text').send({ name: 'Ada' });
      expect(response.status).toBe(400);
      expect(response.headers['content-type']).toMatch(/^text\/html/);
      expect(response.text).toBe('NO ROUTES');
    });

    it('answers malformed JSON with NO ROUTES too (style found before routing)', async () => {
      const response = await request(t.http)
        .post('/v1/test-fixtures/text')
        .set('Content-Type', 'application/json')
        .send('{"name":');
      expect(response.status).toBe(400);
      expect(response.headers['content-type']).toMatch(/^text\/html/);
      expect(response.text).toBe('NO ROUTES');
    });

    it('runs the handler for a valid body', async () => {
      const response = await request(t.http).post('/v1/test-fixtures/text').send(validEcho());
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ok: true, name: 'Ada' });
    });
  });

  describe('X-Request-Id', () => {
    it('is on every response, success or error', async () => {
      const responses = [
        await request(t.http).get('/v1/health/live'),
        await request(t.http).get('/v1/no-such-route'),
        await request(t.http).post('/v1/test-fixtures/echo').send(validEcho()),
        await echo({}),
      ];
      for (const response of responses) {
        expect(response.headers['x-request-id']).toMatch(/^[A-Za-z0-9._-]{8,64}$/);
      }
      const ids = responses.map((response) => response.headers['x-request-id']);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('echoes a well-formed incoming id', async () => {
      const response = await request(t.http).get('/v1/no-such-route').set('X-Request-Id', 'abcd-1234-EFGH');
      expect(response.headers['x-request-id']).toBe('abcd-1234-EFGH');
    });

    it('replaces an ill-formed incoming id with a fresh one', async () => {
      for (const incoming of ['short', 'has spaces in it', 'x'.repeat(65), 'inject\u00e9d-header']) {
        const response = await request(t.http).get('/v1/no-such-route').set('X-Request-Id', incoming);
        expect(response.headers['x-request-id']).not.toBe(incoming);
        expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      }
    });
  });

  describe('security headers', () => {
    it('sets the API security headers (no-store, no ETag) and hides x-powered-by on success and on errors', async () => {
      for (const response of [
        await request(t.http).get('/v1/health/live'),
        await request(t.http).get('/v1/no-such-route'),
        await request(t.http).get('/v1/test-fixtures/crash'),
      ]) {
        expect(response.headers['x-content-type-options']).toBe('nosniff');
        expect(response.headers['x-frame-options']).toBe('DENY');
        expect(response.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
        expect(response.headers['cache-control']).toBe('no-store');
        expect(response.headers['x-powered-by']).toBeUndefined();
        expect(response.headers.etag).toBeUndefined();
      }
    });
  });
});

describe('BODY_LIMIT', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ extraModules: [FixtureModule], env: { BODY_LIMIT: '2kb' } });
  });
  afterAll(() => t.close());

  it('refuses a 3 KB body with 413 when BODY_LIMIT is 2kb', async () => {
    const body = JSON.stringify({ ...validEcho(), note: 'x'.repeat(3 * 1024) });
    expect(Buffer.byteLength(body)).toBeGreaterThan(3 * 1024);
    const json = await request(t.http)
      .post('/v1/test-fixtures/echo')
      .set('Content-Type', 'application/json')
      .send(body);
    expect(json.status).toBe(413);
    expect(json.body).toStrictEqual({ name: 'PayloadTooLargeError', message: expect.any(String) });
  });

  it('answers an oversized body on a text-style route with NO ROUTES (docs/decisions/0004)', async () => {
    const response = await request(t.http)
      .post('/v1/test-fixtures/text')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ ...validEcho(), note: 'x'.repeat(3 * 1024) }));
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.text).toBe('NO ROUTES');
  });

  it('still accepts a body under 2kb', async () => {
    const response = await request(t.http).post('/v1/test-fixtures/text').send(validEcho());
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ok: true, name: 'Ada' });
  });
});

describe('bodies PostgreSQL cannot store or that nest too deep', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ extraModules: [FixtureModule] });
    token = await accessToken(t.http, await registerClient(t.app));
  });
  afterAll(() => t.close());

  const post = (raw: string) =>
    request(t.http)
      .post('/v1/test-fixtures/echo')
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/json')
      .send(raw);

  it('refuses a NUL character in a string or a key with 400', async () => {
    for (const raw of [
      '{"name":"a\\u0000b"}',
      '{"na\\u0000me":"x"}',
      '{"address":{"streetName":"\\u0000"}}',
    ]) {
      const response = await post(raw);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        name: 'ValidationError',
        message: expect.any(String),
        detail: { items: [{ path: '', message: expect.stringContaining('NUL'), type: 'invalid' }] },
      });
    }
  });

  it('refuses JSON nested deeper than 32 levels with 400, not a stack overflow', async () => {
    const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    const response = await post(deep);
    expect(response.status).toBe(400);
    expect(response.body.detail.items[0]).toMatchObject({ path: '', type: 'invalid' });
    const shallow = await post(`${'{"a":'.repeat(20)}1${'}'.repeat(20)}`);
    expect(shallow.status).toBe(400); // refused by the DTO (unknown property a), not by the depth limit
    expect(shallow.body.detail.items[0].message).not.toContain('nesting');
  });

  it('a 400 lists at most 20 items, the first ones found (decision 0073)', async () => {
    const keys = Array.from({ length: 990 }, (_, i) => `unknown${i}`);
    const response = await post(
      JSON.stringify({ ...validEcho(), ...Object.fromEntries(keys.map((key) => [key, 1])) }),
    );
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      name: 'ValidationError',
      message: 'Invalid request payload',
      detail: {
        items: keys
          .slice(0, 20)
          .map((key) => ({ path: key, message: `property ${key} is not allowed`, type: 'invalid' })),
      },
    });
  });

  it('refuses an object with more than 1000 properties before validation, at its path (decision 0073)', async () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 1]));
    const message = 'an object may have at most 1000 properties';
    for (const [body, path] of [
      [many(1001), ''],
      [{ name: 'Ada', address: many(1001) }, 'address'],
      [{ list: [1, { deep: many(5000) }] }, 'list[1].deep'],
    ] as const) {
      const response = await post(JSON.stringify(body));
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        name: 'ValidationError',
        message: 'Invalid request payload',
        detail: { items: [{ path, message, type: 'invalid' }] },
      });
    }
    // Without a token too: the check runs before authentication (where no route is, the answer is 404: decision 0100).
    const anonymous = await request(t.http)
      .post('/v1/test-fixtures/echo')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(many(1001)));
    expect(anonymous.status).toBe(400);
    expect(anonymous.body.detail.items).toEqual([{ path: '', message, type: 'invalid' }]);
    // 1000 is still read and validated: an item per unknown property, 20 answered.
    const limit = await post(JSON.stringify(many(1000)));
    expect(limit.status).toBe(400);
    expect(limit.body.detail.items[0].message).toBe('property k0 is not allowed');
  });
});
