import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { ADVISORY_LOCKS } from '../src/common/database/advisory-locks.js';
import { SmsQueue } from '../src/modules/mobile/sms/sms-queue.js';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import { loggedDuring } from './support/logs.js';
import { expectNoRoutes } from './support/mobile.js';
import { waitFor } from './support/processes.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const bearer = (token: string) => `Bearer ${token}`;

/** POST /v1/mobile/sms's optional Idempotency-Key (decision 0103), with the simulator and the worker in process. */
describe('SMS with an Idempotency-Key', () => {
  let t: TestApp;
  let app: TestClient;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({
      runWorker: true,
      env: {
        SMS_SIM_DELIVERY_DELAY_MS: '200',
        // One message an hour per user: a replay must not use it up.
        SMS_USER_LIMIT_PER_HOUR: '1',
        // Ten requests held in their transactions at once, beside the worker and the test's own connection.
        DATABASE_POOL_SIZE: '20',
      },
    });
    app = await registerClient(t.app, 'sms-idem');
    token = await accessToken(t.http, app);
  });
  afterAll(() => t?.close());
  afterEach(() => jest.restoreAllMocks());

  const send = (authorization: string, body: { dnis: string; message: string }, key?: string) => {
    const test = request(t.http).post('/v1/mobile/sms').set('Authorization', authorization);
    return (key === undefined ? test : test.set('Idempotency-Key', key)).send(body);
  };
  const messagesTo = async (dnis: string) =>
    (await t.dataSource.query('SELECT id, app_id, sender_subject FROM sms_messages WHERE dnis = $1', [
      dnis,
    ])) as { id: string; app_id: string; sender_subject: string | null }[];
  const keysOf = async (appId: string, like: string) =>
    (await t.dataSource.query(
      `SELECT key, response_status, response_body FROM idempotency_keys WHERE app_id = $1 AND key LIKE $2`,
      [appId, like],
    )) as { key: string; response_status: number; response_body: unknown }[];
  // Every queue's hand-overs of a message to the worker, whichever module instance makes them.
  const submissions = () => jest.spyOn(SmsQueue.prototype, 'enqueueSubmit');

  it('sends once for two requests with one key: one message, one submission, the same message_id', async () => {
    const enqueued = submissions();
    const dnis = '541100010001';
    const key = `otp-${randomUUID()}`;
    const first = await send(bearer(token), { dnis, message: 'Your code is 111111' }, key);
    const second = await send(bearer(token), { dnis, message: 'Your code is 111111' }, key);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toStrictEqual(first.body);
    const messages = await messagesTo(dnis);
    expect(messages.map((row) => row.id)).toEqual([(first.body as { message_id: string }).message_id]);
    expect(enqueued).toHaveBeenCalledTimes(1);
    // The one message goes to the provider once.
    const id = messages[0].id;
    const delivered = await waitFor(async () => {
      const [row] = (await t.dataSource.query('SELECT status FROM sms_messages WHERE id = $1', [id])) as {
        status: string;
      }[];
      return row.status === 'DELIVRD';
    }, 15_000);
    expect(delivered).toBe(true);
    const [{ attempts }] = (await t.dataSource.query('SELECT attempts FROM sms_messages WHERE id = $1', [
      id,
    ])) as { attempts: number }[];
    expect(attempts).toBe(1);
    expect(await keysOf(app.appId, `sms ${key}`)).toEqual([
      { key: `sms ${key}`, response_status: 200, response_body: first.body },
    ]);
  });

  it('answers ten requests with one key sent at once, while the first is held in flight: one message, ten identical answers', async () => {
    const enqueued = submissions();
    const dnis = '541100010002';
    const key = `burst-${randomUUID()}`;
    // The first request to claim the key waits in its transaction for the application's SMS lock, held here.
    const holder = t.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [
        ADVISORY_LOCKS.smsRateLimit,
        app.appId,
      ]);
      const pending = Promise.all(
        Array.from({ length: 10 }, () => send(bearer(token), { dnis, message: 'Your code is 222222' }, key)),
      );
      const waiting = async () => {
        const [row] = (await holder.query(
          `SELECT count(*) FILTER (WHERE wait_event = 'advisory')::int AS advisory,
                  count(*) FILTER (WHERE wait_event = 'transactionid')::int AS twins
             FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )) as { advisory: number; twins: number }[];
        return row;
      };
      // The first holds the key (waiting for the lock), the nine others wait on its key.
      expect(await waitFor(async () => (await waiting()).twins === 9, 15_000)).toBe(true);
      expect((await waiting()).advisory).toBe(1);
      await holder.query('SELECT pg_advisory_unlock($1, hashtext($2))', [
        ADVISORY_LOCKS.smsRateLimit,
        app.appId,
      ]);
      const responses = await pending;
      expect(responses.map((response) => response.status)).toEqual(Array(10).fill(200));
      const messages = await messagesTo(dnis);
      expect(messages).toHaveLength(1);
      for (const response of responses) expect(response.body).toStrictEqual({ message_id: messages[0].id });
      expect(enqueued).toHaveBeenCalledTimes(1);
    } finally {
      await holder.query('SELECT pg_advisory_unlock_all()');
      await holder.release();
    }
  });

  it('refuses the key with another message: 400 NO ROUTES, nothing new, and logs why', async () => {
    const enqueued = submissions();
    const dnis = '541100010003';
    const key = `reused-${randomUUID()}`;
    const first = await send(bearer(token), { dnis, message: 'Your code is 333333' }, key);
    expect(first.status).toBe(200);
    const { result: refused, lines } = await loggedDuring('info', () =>
      send(bearer(token), { dnis, message: 'Your code is 444444' }, key),
    );
    expectNoRoutes(refused, 400);
    expect(lines).toContainEqual([
      { appId: app.appId },
      'SMS refused: its Idempotency-Key was used with another message',
    ]);
    expectNoRoutes(
      await send(bearer(token), { dnis: '541100010004', message: 'Your code is 333333' }, key),
      400,
    );
    expect(await messagesTo(dnis)).toHaveLength(1);
    expect(await messagesTo('541100010004')).toHaveLength(0);
    expect(enqueued).toHaveBeenCalledTimes(1);
    expect(await keysOf(app.appId, `sms ${key}`)).toEqual([
      { key: `sms ${key}`, response_status: 200, response_body: first.body },
    ]);
    // The first request's answer is still the key's.
    expect((await send(bearer(token), { dnis, message: 'Your code is 333333' }, key)).body).toStrictEqual(
      first.body,
    );
  });

  it("gives another application's and another user's same key its own message", async () => {
    const other = await registerClient(t.app, 'sms-idem-other');
    const otherToken = await accessToken(t.http, other);
    const [userA, userB] = [randomUUID(), randomUUID()];
    const dnis = '541100010005';
    const key = `shared-${randomUUID()}`;
    const body = { dnis, message: 'Your code is 555555' };
    const senders = [
      bearer(token),
      bearer(otherToken),
      bearer(await subjectToken(app, userA)),
      bearer(await subjectToken(app, userB)),
    ];
    const ids: string[] = [];
    for (const sender of senders) {
      const response = await send(sender, body, key);
      expect(response.status).toBe(200);
      ids.push((response.body as { message_id: string }).message_id);
      // Each one's retry is its own answer.
      expect((await send(sender, body, key)).body).toStrictEqual(response.body);
    }
    expect(new Set(ids).size).toBe(4);
    const messages = await messagesTo(dnis);
    expect(messages).toHaveLength(4);
    expect(new Map(messages.map((row) => [row.id, [row.app_id, row.sender_subject]]))).toEqual(
      new Map([
        [ids[0], [app.appId, null]],
        [ids[1], [other.appId, null]],
        [ids[2], [app.appId, userA]],
        [ids[3], [app.appId, userB]],
      ]),
    );
  });

  it('refuses a malformed key with 400 NO ROUTES and writes nothing', async () => {
    const dnis = '541100010006';
    const before = await keysOf(app.appId, 'sms %');
    for (const key of ['', 'x'.repeat(256), 'two words', 'clé']) {
      expectNoRoutes(await send(bearer(token), { dnis, message: 'Hola' }, key), 400);
    }
    expect(await messagesTo(dnis)).toHaveLength(0);
    expect(await keysOf(app.appId, 'sms %')).toEqual(before);
    // 255 visible ASCII characters are a key.
    expect((await send(bearer(token), { dnis, message: 'Hola' }, '~'.repeat(255))).status).toBe(200);
  });

  it("does not count a replay against the user's limit, and a refused request stores no key", async () => {
    const user = bearer(await subjectToken(app, randomUUID()));
    const dnis = '541100010007';
    const key = `limit-${randomUUID()}`;
    const first = await send(user, { dnis, message: 'Your code is 777777' }, key);
    expect(first.status).toBe(200);
    // The limit (1 an hour) is used up by the first message; its replay is still answered.
    const replay = await send(user, { dnis, message: 'Your code is 777777' }, key);
    expect(replay.status).toBe(200);
    expect(replay.body).toStrictEqual(first.body);
    // A new key is a new message: refused by the limit, and its key is not kept.
    const refusedKey = `refused-${randomUUID()}`;
    const refused = await send(user, { dnis, message: 'Your code is 888888' }, refusedKey);
    expectNoRoutes(refused, 400);
    expect(refused.headers['retry-after']).toBeDefined();
    expect(await keysOf(app.appId, `sms ${refusedKey}%`)).toEqual([]);
    expect(await messagesTo(dnis)).toHaveLength(1);
  });

  it('documents the optional header on POST /mobile/sms as the transfers do', () => {
    const header = (path: string, method: 'post') =>
      t.openApi.paths[path]?.[method]?.parameters?.filter(
        (parameter) => 'name' in parameter && parameter.name.toLowerCase() === 'idempotency-key',
      );
    expect(header('/mobile/sms', 'post')).toEqual(header('/wallet/transactions', 'post'));
    expect(header('/mobile/sms', 'post')).toEqual([
      expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }),
    ]);
  });
});
