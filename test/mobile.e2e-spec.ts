import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { SmsSweeper } from '../src/modules/mobile/sms/sms-sweeper.js';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import { waitFor } from './support/processes.js';
import { expectNoRoutes, expectRefusedUntil, seedBusyDay, sendSms, storedSms } from './support/mobile.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** The simulator's documented test numbers (README, "SMS and SIM swap"). */
const UNDELIVERABLE = '541100000001';
const NO_ROUTE = '541100000002';
const SWAPPED_RECENTLY = '541100000009';
const SWAPPED_300_HOURS_AGO = '541100000008';
const ORDINARY = '541123456789';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const bearer = (token: string) => `Bearer ${token}`;

interface Status {
  status: string;
  delivery_time: string;
  mccmnc: string;
  error_code?: string;
  system_delivery_time?: string;
}

describe('SMS and SIM swap with the simulators (worker in process)', () => {
  let t: TestApp;
  let appA: TestClient;
  let appB: TestClient;
  let tokenA: string;
  let tokenB: string;
  const userA1 = randomUUID();
  const userA2 = randomUUID();

  beforeAll(async () => {
    // Long enough that a message is still QUEUED/ENROUTE when a loaded machine asks for its status.
    t = await startTestApp({ runWorker: true, env: { SMS_SIM_DELIVERY_DELAY_MS: '2000' } });
    appA = await registerClient(t.app, 'sms-a');
    appB = await registerClient(t.app, 'sms-b');
    tokenA = await accessToken(t.http, appA);
    tokenB = await accessToken(t.http, appB);
  });
  afterAll(() => t?.close());

  const send = (authorization: string | undefined, body: unknown) => {
    const test = request(t.http).post('/v1/mobile/sms');
    return (authorization === undefined ? test : test.set('Authorization', authorization)).send(
      body as object,
    );
  };
  const status = (authorization: string | undefined, id: string) => {
    const test = request(t.http).get(`/v1/mobile/sms/${id}`);
    return authorization === undefined ? test : test.set('Authorization', authorization);
  };
  const simSwap = (authorization: string | undefined, body: unknown) => {
    const test = request(t.http).post('/v1/mobile/simSwap');
    return (authorization === undefined ? test : test.set('Authorization', authorization)).send(
      body as object,
    );
  };
  const sent = async (authorization: string, dnis = ORDINARY, message = 'Your code is 123456') => {
    const response = await send(authorization, { dnis, message });
    expect(response.status).toBe(200);
    return (response.body as { message_id: string }).message_id;
  };
  const statusOf = async (authorization: string, id: string): Promise<Status> => {
    const response = await status(authorization, id);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    return response.body as Status;
  };
  const waitForStatus = async (authorization: string, id: string, expected: string): Promise<Status> => {
    let last: Status | undefined;
    const reached = await waitFor(
      async () => (last = await statusOf(authorization, id)).status === expected,
      15_000,
      100,
    );
    if (!reached) throw new Error(`message ${id} stayed ${last?.status}, expected ${expected}`);
    return last!;
  };

  describe('POST /v1/mobile/sms', () => {
    it('accepts a message and answers a message_id of this service (uuid)', async () => {
      const response = await send(bearer(tokenA), { dnis: ORDINARY, message: 'Hola' });
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toStrictEqual({ message_id: expect.stringMatching(UUID) });
      const [row] = (await t.dataSource.query(
        'SELECT app_id, sender_subject, dnis FROM sms_messages WHERE id = $1',
        [response.body.message_id],
      )) as { app_id: string; sender_subject: string | null; dnis: string }[];
      expect(row).toEqual({ app_id: appA.appId, sender_subject: null, dnis: ORDINARY });
    });

    it('is delivered by the simulator: QUEUED/ENROUTE, then DELIVRD with its times and err 000', async () => {
      const before = Date.now();
      const id = await sent(bearer(tokenA));
      const early = await statusOf(bearer(tokenA), id);
      expect(['QUEUED', 'ENROUTE']).toContain(early.status);
      expect(early).toMatchObject({
        delivery_time: '',
        error_code: '',
        system_delivery_time: '',
        mccmnc: '',
      });

      const done = await waitForStatus(bearer(tokenA), id, 'DELIVRD');
      expect(done).toStrictEqual({
        status: 'DELIVRD',
        delivery_time: expect.stringMatching(ISO),
        mccmnc: '',
        error_code: '000',
        system_delivery_time: expect.stringMatching(ISO),
      });
      expect(Date.parse(done.delivery_time)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(done.system_delivery_time!)).toBeGreaterThanOrEqual(Date.parse(done.delivery_time));
      // The text is erased once the provider has the message.
      const [row] = (await t.dataSource.query('SELECT body, provider FROM sms_messages WHERE id = $1', [
        id,
      ])) as { body: string | null; provider: string }[];
      expect(row).toEqual({ body: null, provider: 'simulator' });
    });

    it('reports UNDELIV with error code 001 for the undeliverable test number', async () => {
      const id = await sent(bearer(tokenA), UNDELIVERABLE);
      const done = await waitForStatus(bearer(tokenA), id, 'UNDELIV');
      expect(done).toMatchObject({
        status: 'UNDELIV',
        error_code: '001',
        delivery_time: '', // not delivered: no delivery time
        system_delivery_time: expect.stringMatching(ISO),
      });
    });

    it('answers 400 NO ROUTES for the no-route test number and stores nothing', async () => {
      expectNoRoutes(await send(bearer(tokenA), { dnis: NO_ROUTE, message: 'Hola' }), 400);
      const [{ count }] = (await t.dataSource.query(
        'SELECT count(*)::int AS count FROM sms_messages WHERE dnis = $1',
        [NO_ROUTE],
      )) as { count: number }[];
      expect(count).toBe(0);
    });

    it('accepts a user token and records the sender', async () => {
      const id = await sent(bearer(await subjectToken(appA, userA1)));
      const [row] = (await t.dataSource.query('SELECT sender_subject FROM sms_messages WHERE id = $1', [
        id,
      ])) as { sender_subject: string }[];
      expect(row.sender_subject).toBe(userA1);
    });

    it('accepts 64 characters, GSM or not (emoji count as one character each)', async () => {
      expect((await send(bearer(tokenA), { dnis: ORDINARY, message: 'x'.repeat(64) })).status).toBe(200);
      expect((await send(bearer(tokenA), { dnis: ORDINARY, message: 'é€'.repeat(32) })).status).toBe(200);
      expect((await send(bearer(tokenA), { dnis: ORDINARY, message: '😀'.repeat(64) })).status).toBe(200);
      expect((await send(bearer(tokenA), { dnis: ORDINARY, message: '❤️'.repeat(32) })).status).toBe(200);
    });

    it.each([
      ['11 digits', { dnis: '54112345678', message: 'Hola' }],
      ['13 digits', { dnis: '5411234567890', message: 'Hola' }],
      ['a plus sign', { dnis: '+54112345678', message: 'Hola' }],
      ['letters', { dnis: '54112345678a', message: 'Hola' }],
      ['spaces', { dnis: '54 112345678', message: 'Hola' }],
      ['non-ASCII digits', { dnis: '٥٤١١٢٣٤٥٦٧٨٩', message: 'Hola' }],
      ['a number instead of a string', { dnis: 541123456789, message: 'Hola' }],
      ['no dnis', { message: 'Hola' }],
      ['an empty message', { dnis: ORDINARY, message: '' }],
      ['65 characters', { dnis: ORDINARY, message: 'x'.repeat(65) }],
      ['65 emoji', { dnis: ORDINARY, message: '😀'.repeat(65) }],
      [
        '33 hearts with their variation selector (66 code points)',
        { dnis: ORDINARY, message: '❤️'.repeat(33) },
      ],
      ['a message that is not a string', { dnis: ORDINARY, message: ['Hola'] }],
      ['no message', { dnis: ORDINARY }],
      ['an unknown property', { dnis: ORDINARY, message: 'Hola', sender: 'ACME' }],
      ['null', null],
    ])('answers 400 NO ROUTES for %s', async (_case, body) => {
      expectNoRoutes(await send(bearer(tokenA), body), 400);
    });

    it('answers 400 NO ROUTES for malformed JSON, a JSON array and another content type', async () => {
      const raw = (contentType: string, text: string) =>
        request(t.http)
          .post('/v1/mobile/sms')
          .set('Authorization', bearer(tokenA))
          .set('Content-Type', contentType)
          .send(text);
      expectNoRoutes(await raw('application/json', '{"dnis": "541123456789", "message": '), 400);
      expectNoRoutes(await raw('application/json', JSON.stringify([{ dnis: ORDINARY, message: 'x' }])), 400);
      expectNoRoutes(await raw('text/plain', JSON.stringify({ dnis: ORDINARY, message: 'x' })), 400);
      expectNoRoutes(await raw('application/json', ''), 400);
    });
  });

  describe('GET /v1/mobile/sms/{uuid}', () => {
    it('answers UNKNOWN with empty strings for an id never sent', async () => {
      const response = await status(bearer(tokenA), randomUUID());
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ status: 'UNKNOWN', delivery_time: '', mccmnc: '' });
    });

    it("answers UNKNOWN for another application's message, to its client and to its users", async () => {
      const idOfB = await sent(bearer(tokenB));
      expect((await statusOf(bearer(tokenB), idOfB)).status).not.toBe('UNKNOWN');
      const unknown = { status: 'UNKNOWN', delivery_time: '', mccmnc: '' };
      expect(await statusOf(bearer(tokenA), idOfB)).toStrictEqual(unknown);
      expect(await statusOf(bearer(await subjectToken(appA, userA1)), idOfB)).toStrictEqual(unknown);
    });

    it('shows a user only the messages it sent; the application sees all of its own', async () => {
      const user1 = bearer(await subjectToken(appA, userA1));
      const user2 = bearer(await subjectToken(appA, userA2));
      const byUser1 = await sent(user1);
      const byApp = await sent(bearer(tokenA));

      expect((await statusOf(user1, byUser1)).status).not.toBe('UNKNOWN');
      expect((await statusOf(user2, byUser1)).status).toBe('UNKNOWN');
      expect((await statusOf(user1, byApp)).status).toBe('UNKNOWN');
      expect((await statusOf(bearer(tokenA), byUser1)).status).not.toBe('UNKNOWN');
      // A user token of B naming A's user reaches nothing of A.
      expect((await statusOf(bearer(await subjectToken(appB, userA1)), byUser1)).status).toBe('UNKNOWN');
      expect(await waitForStatus(user1, byUser1, 'DELIVRD')).toMatchObject({ error_code: '000' });
    });

    it('answers 400 NO ROUTES for a path parameter that is not a uuid', async () => {
      expectNoRoutes(await status(bearer(tokenA), 'not-a-uuid'), 400);
      expectNoRoutes(await status(bearer(tokenA), '12345678-1234-1234-1234-1234567890'), 400);
    });

    it('accepts an upper-case uuid', async () => {
      const id = await sent(bearer(tokenA));
      expect((await statusOf(bearer(tokenA), id.toUpperCase())).status).not.toBe('UNKNOWN');
    });
  });

  describe('POST /v1/mobile/simSwap', () => {
    it('says the SIM was swapped recently for the simulator test number', async () => {
      const response = await simSwap(bearer(tokenA), { phoneNumber: SWAPPED_RECENTLY });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        message: 'The SIM card of this phone number was swapped within the last 240 hours.',
      });
    });

    it('says it was not swapped for any other number, and for a swap older than the maximum age', async () => {
      for (const phoneNumber of [ORDINARY, SWAPPED_300_HOURS_AGO]) {
        const response = await simSwap(bearer(await subjectToken(appA, userA1)), { phoneNumber });
        expect(response.status).toBe(200);
        expect(response.body).toStrictEqual({
          message: 'The SIM card of this phone number was not swapped within the last 240 hours.',
        });
      }
    });

    it.each([
      ['11 digits', { phoneNumber: '54112345678' }],
      ['13 digits', { phoneNumber: '5411234567890' }],
      ['E.164 with a plus', { phoneNumber: '+541123456789' }],
      ['a number instead of a string', { phoneNumber: 541123456789 }],
      ['no phoneNumber', {}],
      ['an unknown property', { phoneNumber: ORDINARY, maxAge: 24 }],
    ])('answers 400 NO ROUTES for %s', async (_case, body) => {
      expectNoRoutes(await simSwap(bearer(tokenA), body), 400);
    });
  });

  describe('credentials on every route', () => {
    const routes = () => [
      () => send(undefined, { dnis: ORDINARY, message: 'Hola' }),
      () => status(undefined, randomUUID()),
      () => simSwap(undefined, { phoneNumber: ORDINARY }),
    ];
    const withAuthorization = (authorization: string) => [
      () => send(authorization, { dnis: ORDINARY, message: 'Hola' }),
      () => status(authorization, randomUUID()),
      () => simSwap(authorization, { phoneNumber: ORDINARY }),
    ];

    it('answers 401 NO ROUTES without a token', async () => {
      for (const call of routes()) expectNoRoutes(await call(), 401);
    });

    it('answers 401 NO ROUTES for a garbage token, an empty bearer and another scheme', async () => {
      for (const authorization of ['Bearer garbage', 'Bearer a.b.c', 'Bearer ', `Basic ${tokenA}`]) {
        for (const call of withAuthorization(authorization)) expectNoRoutes(await call(), 401);
      }
    });

    it('answers 401 (not 400) for an invalid body without credentials', async () => {
      expectNoRoutes(await send(undefined, { dnis: 'x' }), 401);
      expectNoRoutes(await status(undefined, 'not-a-uuid'), 401);
    });
  });

  describe('nothing is lost', () => {
    it('the sweeper submits a QUEUED message whose job the queue lost', async () => {
      const id = randomUUID();
      await t.dataSource.query(
        `INSERT INTO sms_messages (id, app_id, dnis, body, status, created_at)
         VALUES ($1, $2, $3, 'lost job', 'QUEUED', now() - interval '2 minutes')`,
        [id, appA.appId, ORDINARY],
      );
      await expect(t.app.get(SmsSweeper).sweep()).resolves.toBeGreaterThanOrEqual(1);
      await waitForStatus(bearer(tokenA), id, 'DELIVRD');
      // Once submitted, a second sweep has nothing to do for it.
      await t.app.get(SmsSweeper).sweep(0);
      const [row] = (await t.dataSource.query('SELECT attempts FROM sms_messages WHERE id = $1', [id])) as {
        attempts: number;
      }[];
      expect(row.attempts).toBe(1);
    });
  });

  describe('OpenAPI', () => {
    it('documents the three routes with both schemes, their bodies and the text/html errors', () => {
      const paths = t.openApi.paths;
      const operations = [
        paths['/mobile/sms']?.post,
        paths['/mobile/sms/{uuid}']?.get,
        paths['/mobile/simSwap']?.post,
      ];
      for (const operation of operations) {
        expect(operation).toBeDefined();
        expect(operation!.security).toEqual([{ OAuth2ClientCredentials: [] }, { BearerAuth: [] }]);
        for (const code of ['400', '401']) {
          expect(operation!.responses[code]).toMatchObject({
            content: { 'text/html': { schema: { type: 'string', example: 'NO ROUTES' } } },
          });
        }
      }
      const schemas = t.openApi.components!.schemas!;
      expect(Object.keys(schemas)).toEqual(
        expect.arrayContaining([
          'SMSSendRequest',
          'SMSSendResponse',
          'SMSStatusResponse',
          'SMSStatusNotFoundResponse',
          'SimSwapRequest',
          'SimSwapResponse',
        ]),
      );
      expect(schemas.SMSSendRequest).toMatchObject({
        required: ['dnis', 'message'],
        properties: { dnis: { pattern: '^[0-9]{12}$' }, message: { minLength: 1, maxLength: 64 } },
      });
      expect(Object.keys((schemas.SMSStatusResponse as { properties: object }).properties).sort()).toEqual([
        'delivery_time',
        'error_code',
        'mccmnc',
        'status',
        'system_delivery_time',
      ]);
    });
  });
});

describe('SMS rate limits (counted in the database)', () => {
  let t: TestApp;
  let app: TestClient;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        SMS_APP_LIMIT_PER_MINUTE: '4',
        SMS_DESTINATION_LIMIT_PER_HOUR: '2',
        SMS_APP_LIMIT_PER_DAY: '50',
      },
    });
    app = await registerClient(t.app, 'rate-limited');
    token = await accessToken(t.http, app);
  });
  afterAll(() => t?.close());

  const send = (authorization: string, dnis: string) => sendSms(t.http, authorization, dnis);
  const stored = (appId: string) => storedSms(t.dataSource, appId);

  it('refuses a third message to one destination within the hour, then the fifth of the application within the minute', async () => {
    const first = await send(bearer(token), '541100000101');
    expect(first.status).toBe(200);
    expect((await send(bearer(token), '541100000101')).status).toBe(200);
    // A place to the destination frees when the first of the two leaves the hour.
    const [{ created_at: firstAt }] = (await t.dataSource.query(
      'SELECT created_at FROM sms_messages WHERE id = $1',
      [(first.body as { message_id: string }).message_id],
    )) as { created_at: Date }[];
    await expectRefusedUntil(() => send(bearer(token), '541100000101'), firstAt, 3600);
    // A user token of the same application shares its limits.
    expect((await send(bearer(await subjectToken(app, randomUUID())), '541100000102')).status).toBe(200);
    expect((await send(bearer(token), '541100000103')).status).toBe(200);
    expectNoRoutes(await send(bearer(token), '541100000104'), 400);
    expect(await stored(app.appId)).toBe(4);
  });

  it('counts per application: another application is not limited by the first', async () => {
    const other = await registerClient(t.app, 'other');
    const otherToken = await accessToken(t.http, other);
    expect((await send(bearer(otherToken), '541100000101')).status).toBe(200);
    expect((await send(bearer(otherToken), '541100000101')).status).toBe(200);
  });

  it('holds under concurrent requests: exactly the limit is accepted', async () => {
    const burst = await registerClient(t.app, 'burst');
    const burstToken = await accessToken(t.http, burst);
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        send(bearer(burstToken), `5411000002${String(i).padStart(2, '0')}`),
      ),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((code) => code === 200)).toHaveLength(4);
    for (const response of responses.filter((r) => r.status !== 200)) expectNoRoutes(response, 400);
    expect(await stored(burst.appId)).toBe(4);
  });

  it('refuses past the daily limit even when the last minute is quiet', async () => {
    const busy = await registerClient(t.app, 'busy-day');
    const busyToken = await accessToken(t.http, busy);
    await seedBusyDay(t.dataSource, busy.appId, 50);
    expectNoRoutes(await send(bearer(busyToken), '541100000300'), 400);
    // Messages older than a day no longer count.
    await t.dataSource.query(
      `UPDATE sms_messages SET created_at = now() - interval '25 hours' WHERE app_id = $1`,
      [busy.appId],
    );
    expect((await send(bearer(busyToken), '541100000300')).status).toBe(200);
  });
});
