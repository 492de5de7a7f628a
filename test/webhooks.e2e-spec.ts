import { randomUUID } from 'node:crypto';
import type { JSONWebKeySet } from 'jose';
import request from 'supertest';
import { ValidationFailedError } from '../src/common/errors/domain-errors.js';
import { JOBS, QUEUES } from '../src/common/queue/queue-names.js';
import { QueueFactory } from '../src/common/queue/queue.factory.js';
import { AppsService } from '../src/modules/apps/apps.service.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import { WebhookDeliveryService } from '../src/modules/webhooks/webhook-delivery.service.js';
import { WebhookRelay } from '../src/modules/webhooks/webhook-relay.js';
import { WEBHOOK_EVENTS } from '../src/modules/webhooks/webhook-events.js';
import { WebhooksService, type EmitInput, type EventView } from '../src/modules/webhooks/webhooks.service.js';
import { registerClient } from './support/auth.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { UUID_V7 } from './support/wallet.js';
import {
  isolatedRedisEnv,
  pollUntil,
  sleep,
  type ReceivedWebhook,
  verifyWebhook,
  WebhookReceiver,
  type Responder,
} from './support/webhook-receiver.js';

/** Fast schedule: 4 attempts within ~0.6 s; the sweeper looks every 200 ms. */
const FAST = {
  WEBHOOK_RETRY_DELAYS: '100ms,200ms,300ms',
  WEBHOOK_SWEEP_INTERVAL_MS: '200',
  // Long enough that a POST on a loaded machine is not a failed attempt (the tests count attempts exactly).
  WEBHOOK_TIMEOUT_MS: '5000',
};
/** Longer than the whole schedule (with jitter) plus several sweeps: nothing may arrive after it. */
const QUIET_MS = 1_200;

const backend = process.env.TEST_REDIS_URL ? 'redis' : 'postgres';

describe(`webhook delivery (${backend} queue backend, worker in process)`, () => {
  let t: TestApp;
  let webhooks: WebhooksService;
  let jwks: JSONWebKeySet;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      runWorker: true,
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ...FAST, ...isolatedRedisEnv(11) },
    });
    webhooks = t.app.get(WebhooksService);
    const response = await request(t.http).get('/v1/.well-known/jwks.json');
    expect(response.status).toBe(200);
    jwks = response.body as JSONWebKeySet;
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });
  afterAll(() => t?.close());

  /** A fresh application whose webhook URL points at a fresh receiver. */
  const appWithReceiver = async (responder?: Responder) => {
    const receiver = await WebhookReceiver.start(responder);
    receivers.push(receiver);
    const { appId } = await registerClient(t.app, 'webhook receiver');
    await t.app.get(AppsService).setWebhook(appId, receiver.url(), cliActor('test'));
    return { appId, receiver };
  };

  /** Emits one event in a transaction of its own (as a producer would, with the transaction's manager). */
  const emit = (input: EmitInput) => t.dataSource.transaction((manager) => webhooks.emit(manager, input));

  const transferUpdate = (appId: string, uuid = randomUUID()): EmitInput => ({
    appId,
    event: WEBHOOK_EVENTS.transferUpdate,
    subject: uuid,
    data: { uuid, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
  });

  const view = async (appId: string, eventId: string): Promise<EventView> => {
    const found = (await webhooks.list({ appId })).find((event) => event.eventId === eventId);
    if (!found) throw new Error(`event ${eventId} is not listed`);
    return found;
  };

  const waitForStatus = async (
    appId: string,
    eventId: string,
    status: EventView['status'],
    timeoutMs?: number,
  ) => {
    await pollUntil(
      `event ${eventId} to be ${status}`,
      async () => (await view(appId, eventId)).status === status,
      timeoutMs,
    );
    return view(appId, eventId);
  };

  it('send-test reaches the receiver as a compact JWS that verifies with the JWKS (ES256) and breaks on any changed byte', async () => {
    const { appId, receiver } = await appWithReceiver();
    const before = Math.floor(Date.now() / 1000);
    const { eventId } = await webhooks.sendTest(appId, cliActor('test'));
    await pollUntil('the test webhook', () => receiver.acknowledged(eventId).length === 1);
    const after = Math.floor(Date.now() / 1000);

    const [received] = receiver.requests;
    expect(receiver.requests).toHaveLength(1);
    expect(received.headers['content-type']).toBe('plain/text');
    expect(received.headers['webhook-id']).toBe(eventId);
    const timestampHeader = String(received.headers['webhook-timestamp']);
    expect(timestampHeader).toMatch(/^\d+$/);
    expect(Number(timestampHeader)).toBeGreaterThanOrEqual(before);
    expect(Number(timestampHeader)).toBeLessThanOrEqual(after);

    expect(received.body.split('.')).toHaveLength(3);
    const { payload, header } = await verifyWebhook(received.body, jwks);
    expect(header.alg).toBe('ES256');
    expect(jwks.keys.map((key) => key.kid)).toContain(header.kid);
    // The signature covers the attempt's Webhook-Id and Webhook-Timestamp (decision 0008's amendment).
    expect({ id: header['webhook-id'], timestamp: header['webhook-timestamp'] }).toEqual({
      id: eventId,
      timestamp: Number(timestampHeader),
    });
    expect(payload).toEqual({
      event: 'webhook_test',
      timestamp: expect.any(Number),
      data: { message: expect.any(String) },
    });
    const { timestamp, data } = payload as { timestamp: number; data: { message: string } };
    expect(Number.isInteger(timestamp)).toBe(true);
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(after);
    expect(data.message.length).toBeGreaterThan(0);

    // One changed byte anywhere (protected header, payload, signature) and verification fails.
    const [headerPart, payloadPart] = received.body.split('.');
    const alter = (position: number) =>
      received.body.slice(0, position) +
      (received.body[position] === 'A' ? 'B' : 'A') +
      received.body.slice(position + 1);
    await expect(verifyWebhook(alter(Math.floor(headerPart.length / 2)), jwks)).rejects.toThrow();
    const inPayload = headerPart.length + 1 + Math.floor(payloadPart.length / 2);
    await expect(verifyWebhook(alter(inPayload), jwks)).rejects.toThrow('signature verification failed');
    const inSignature = received.body.length - 10;
    await expect(verifyWebhook(alter(inSignature), jwks)).rejects.toThrow('signature verification failed');
    await expect(verifyWebhook(received.body, jwks)).resolves.toMatchObject({ payload });

    // The worker records the outcome once the answer reaches it, a moment after the receiver sent it.
    expect(await waitForStatus(appId, eventId, 'delivered')).toMatchObject({
      status: 'delivered',
      attempts: 1,
      event: 'webhook_test',
    });
  });

  it("names the receiving application in every signed header (webhook-app): two applications' receivers each see only their own id", async () => {
    const apps = [await appWithReceiver(), await appWithReceiver()];
    // Every kind the worker signs: a test event, a transfer_update, a kyc_steep_update, and a replay.
    const sent = await Promise.all(
      apps.map(async ({ appId }) => {
        const session = randomUUID();
        const ids = [
          (await webhooks.sendTest(appId, cliActor('test'))).eventId,
          await emit(transferUpdate(appId)),
          await emit({
            appId,
            event: WEBHOOK_EVENTS.kycStepUpdate,
            subject: session,
            data: { session, steep: 'identity', backStatus: 'PENDING', newStatus: 'APPROVED' },
          }),
        ];
        for (const id of ids) await waitForStatus(appId, id, 'delivered');
        await webhooks.replay(ids[1], cliActor('test'));
        await waitForStatus(appId, ids[1], 'delivered');
        return ids;
      }),
    );
    for (const [n, { appId, receiver }] of apps.entries()) {
      const [test, transfer, kyc] = sent[n];
      expect(receiver.requests.map((req) => req.id)).toEqual(expect.arrayContaining([test, transfer, kyc]));
      expect(receiver.acknowledged(transfer)).toHaveLength(2); // first delivery and replay
      expect(receiver.requests).toHaveLength(4);
      for (const req of receiver.requests) {
        const { payload, header } = await verifyWebhook(req.body, jwks);
        // The id and time as before, and the application the body was made for, signed with them.
        expect(header).toEqual({
          alg: 'ES256',
          kid: expect.any(String),
          typ: 'JWT',
          'webhook-id': req.id,
          'webhook-timestamp': Number(req.headers['webhook-timestamp']),
          'webhook-app': appId,
        });
        expect(Object.keys(header).at(-1)).toBe('webhook-app');
        expect(payload).toMatchObject({ event: expect.any(String), data: expect.any(Object) });
      }
    }
    // A posts a body it received, with its headers, to B's URL within the freshness window: B's receiver takes
    // it, and a verifier that checks webhook-app against B's client id refuses it (and takes B's own).
    const [a, b] = apps;
    const captured = a.receiver.requests[0];
    const replayed = await fetch(b.receiver.url(), {
      method: 'POST',
      headers: {
        'Content-Type': 'plain/text',
        'Webhook-Id': captured.id,
        'Webhook-Timestamp': String(captured.headers['webhook-timestamp']),
      },
      body: captured.body,
    });
    expect(replayed.status).toBe(200);
    const accepts = async (req: ReceivedWebhook, clientId: string) => {
      const { header } = await verifyWebhook(req.body, jwks);
      return (
        header['webhook-id'] === req.id &&
        header['webhook-timestamp'] === Number(req.headers['webhook-timestamp']) &&
        header['webhook-app'] === clientId
      );
    };
    const atB = b.receiver.requests.at(-1)!;
    expect(atB.id).toBe(captured.id);
    expect(await accepts(atB, b.appId)).toBe(false);
    expect(await accepts(atB, a.appId)).toBe(true); // only the application tells it apart
    expect(await Promise.all(b.receiver.requests.slice(0, -1).map((req) => accepts(req, b.appId)))).toEqual([
      true,
      true,
      true,
      true,
    ]);
  });

  it('retries a receiver that answers 500 twice: three attempts, one Webhook-Id, then nothing more', async () => {
    const { appId, receiver } = await appWithReceiver((req, self) => ({
      status: self.attemptsOf(req.id).length <= 2 ? 500 : 200,
    }));
    const eventId = await emit(transferUpdate(appId));
    // The id (the Webhook-Id) is time-ordered, as the money path's events' (decision 0050).
    expect(eventId).toMatch(UUID_V7);
    const delivered = await waitForStatus(appId, eventId, 'delivered');
    await sleep(QUIET_MS);

    expect(receiver.requests.map((req) => req.id)).toEqual([eventId, eventId, eventId]);
    expect(receiver.requests.map((req) => req.status)).toEqual([500, 500, 200]);
    // Every attempt is signed afresh, but with the same event payload.
    const payloads = await Promise.all(
      receiver.requests.map(async (req) => (await verifyWebhook(req.body, jwks)).payload),
    );
    expect(new Set(payloads.map((payload) => JSON.stringify(payload))).size).toBe(1);

    const listed = await view(appId, eventId);
    expect(listed).toMatchObject({ status: 'delivered', attempts: 3, replays: 0, lastError: null });
    expect(listed.deliveredAt).toBe(delivered.deliveredAt);
    expect(listed.deliveries.map((delivery) => delivery.statusCode)).toEqual([500, 500, 200]);
    expect(listed.deliveries.map((delivery) => delivery.outcome)).toEqual(['failed', 'failed', 'delivered']);
    expect(listed.deliveries.map((delivery) => delivery.attempt)).toEqual([1, 2, 3]);
    expect(listed.deliveries[0].error).toBe('HTTP 500');
  });

  it('marks the event failed once the retries are used up, and replay delivers it with the same Webhook-Id', async () => {
    let fixed = false;
    const { appId, receiver } = await appWithReceiver(() => ({ status: fixed ? 200 : 503 }));
    const eventId = await emit(transferUpdate(appId));
    const failed = await waitForStatus(appId, eventId, 'failed');
    await sleep(QUIET_MS);

    expect(receiver.requests).toHaveLength(4); // the first attempt and one per configured delay
    expect(failed).toMatchObject({ attempts: 4, lastError: 'HTTP 503', replays: 0, deliveredAt: null });
    expect(failed.deliveries.map((delivery) => delivery.statusCode)).toEqual([503, 503, 503, 503]);
    expect((await view(appId, eventId)).status).toBe('failed');

    fixed = true;
    await expect(webhooks.replay(eventId, cliActor('test'))).resolves.toEqual({ eventId, status: 'pending' });
    const replayed = await waitForStatus(appId, eventId, 'delivered');
    expect(replayed).toMatchObject({ replays: 1, attempts: 1, lastError: null });
    expect(receiver.requests).toHaveLength(5);
    expect(receiver.requests.map((req) => req.id)).toEqual(Array(5).fill(eventId));
    expect(receiver.acknowledged(eventId)).toHaveLength(1);
    expect(replayed.deliveries.map((delivery) => delivery.statusCode).sort()).toEqual([
      200, 503, 503, 503, 503,
    ]);

    // An unknown event is not found.
    await expect(webhooks.replay(randomUUID(), cliActor('test'))).rejects.toThrow('Webhook event not found');
  });

  it('honours Retry-After on a 429 even though the schedule says 100 ms', async () => {
    const { appId, receiver } = await appWithReceiver((req, self) =>
      self.attemptsOf(req.id).length === 1
        ? { status: 429, headers: { 'Retry-After': '1' } }
        : { status: 200 },
    );
    const eventId = await emit(transferUpdate(appId));
    await waitForStatus(appId, eventId, 'delivered');

    const [first, second] = receiver.attemptsOf(eventId);
    expect(receiver.attemptsOf(eventId)).toHaveLength(2);
    expect(first.status).toBe(429);
    expect(second.status).toBe(200);
    expect(second.receivedAt - (first.answeredAt ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it('counts a receiver that does not answer within WEBHOOK_TIMEOUT_MS as a failed attempt and retries', async () => {
    const { appId, receiver } = await appWithReceiver((req, self) =>
      self.attemptsOf(req.id).length === 1 ? 'hang' : { status: 200 },
    );
    const eventId = await emit(transferUpdate(appId));
    const delivered = await waitForStatus(appId, eventId, 'delivered', 30_000);

    expect(receiver.attemptsOf(eventId)).toHaveLength(2);
    expect(receiver.attemptsOf(eventId)[0].answeredAt).toBeUndefined();
    expect(delivered.attempts).toBe(2);
    const [timedOut, ok] = delivered.deliveries;
    expect(timedOut).toMatchObject({ attempt: 1, outcome: 'failed', statusCode: null });
    expect(timedOut.error).toMatch(/timed out/);
    expect(timedOut.durationMs).toBeGreaterThanOrEqual(4_950);
    expect(timedOut.durationMs).toBeLessThan(15_000);
    expect(ok).toMatchObject({ attempt: 2, outcome: 'delivered', statusCode: 200 });
  });

  it('emits nothing for a change that rolled back', async () => {
    const { appId, receiver } = await appWithReceiver();
    let rolledBackId: string | undefined;
    await expect(
      t.dataSource.transaction(async (manager) => {
        rolledBackId = await webhooks.emit(manager, transferUpdate(appId));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(rolledBackId).toEqual(expect.any(String));

    const rows = await t.dataSource.query('SELECT id FROM webhook_events WHERE app_id = $1 OR id = $2', [
      appId,
      rolledBackId,
    ]);
    expect(rows).toEqual([]);

    // Several sweeps pass; then a committed event serves as a barrier: it arrives, the rolled-back one never.
    await sleep(1_000);
    const barrier = await emit(transferUpdate(appId));
    await pollUntil('the barrier event', () => receiver.acknowledged(barrier).length === 1);
    expect(receiver.requests.map((req) => req.id)).toEqual([barrier]);
  });

  it('delivers the events of one subject in emission order, each only after its predecessor was acknowledged', async () => {
    const subject = randomUUID();
    const ids: string[] = [];
    const { appId, receiver } = await appWithReceiver((req, self) => ({
      // The first delivery of event #1 fails once; every answer takes a little while, to widen any race.
      status: req.id === ids[0] && self.attemptsOf(req.id).length === 1 ? 500 : 200,
      delayMs: 20,
    }));
    const transitions = [
      ['PENDING', 'PENDING'],
      ['PENDING', 'ACCEPTED'],
      ['ACCEPTED', 'REJECTED'],
      ['REJECTED', 'PENDING'],
      ['PENDING', 'ACCEPTED'],
    ];
    for (const [backStatus, newStatus] of transitions) {
      await t.dataSource.transaction(async (manager) => {
        // The id is known before commit, so before the receiver can see the event.
        ids.push(
          await webhooks.emit(manager, {
            appId,
            event: WEBHOOK_EVENTS.transferUpdate,
            subject,
            data: { uuid: subject, movementType: 'WITHDRAW', backStatus, newStatus },
          }),
        );
      });
    }
    await pollUntil(
      'all five events acknowledged',
      () => new Set(receiver.acknowledged().map((req) => req.id)).size === 5,
    );

    const firstAcks: string[] = [];
    for (const req of receiver.acknowledged()) if (!firstAcks.includes(req.id)) firstAcks.push(req.id);
    expect(firstAcks).toEqual(ids);

    expect(receiver.attemptsOf(ids[0]).map((req) => req.status)).toEqual([500, 200]);
    for (let n = 1; n < ids.length; n++) {
      const predecessorAck = receiver.acknowledged(ids[n - 1])[0];
      const firstArrival = receiver.attemptsOf(ids[n])[0];
      expect(firstArrival.index).toBeGreaterThan(predecessorAck.index);
      expect(firstArrival.receivedAt).toBeGreaterThanOrEqual(predecessorAck.answeredAt ?? Infinity);
      expect(receiver.attemptsOf(ids[n])).toHaveLength(1);
    }
    for (const [n, id] of ids.entries()) {
      const { payload } = await verifyWebhook(receiver.acknowledged(id)[0].body, jwks);
      const [backStatus, newStatus] = transitions[n];
      expect(payload).toMatchObject({
        event: 'transfer_update',
        data: { uuid: subject, movementType: 'WITHDRAW', backStatus, newStatus },
      });
    }
  });

  it('retries an application without a webhook URL and fails it naming the missing URL', async () => {
    const { appId } = await registerClient(t.app, 'no webhook');
    const eventId = await emit(transferUpdate(appId));
    const failed = await waitForStatus(appId, eventId, 'failed');

    expect(failed.attempts).toBe(4);
    expect(failed.lastError).toMatch(/no webhook URL/);
    expect(failed.deliveries).toHaveLength(4);
    for (const delivery of failed.deliveries) {
      expect(delivery).toMatchObject({ outcome: 'failed', statusCode: null, error: failed.lastError });
    }
  });

  it('delivers an event once even when the relay notice and concurrent sweeps race', async () => {
    const { appId, receiver } = await appWithReceiver(() => ({ status: 200, delayMs: 30 }));
    const relay = t.app.get(WebhookRelay);
    const ids = await t.dataSource.transaction(async (manager) => {
      const emitted: string[] = [];
      for (let n = 0; n < 10; n++) emitted.push(await webhooks.emit(manager, transferUpdate(appId)));
      return emitted;
    });
    const swept: number[] = [];
    for (let round = 0; round < 5; round++) {
      swept.push(...(await Promise.all(Array.from({ length: 4 }, () => relay.sweep(0)))));
    }
    expect(swept.every((count) => count >= 0 && count <= ids.length)).toBe(true);

    await pollUntil(
      'all ten events acknowledged',
      () => new Set(receiver.acknowledged().map((req) => req.id)).size === 10,
    );
    await sleep(QUIET_MS);
    for (const id of ids) await waitForStatus(appId, id, 'delivered');
    for (const id of ids) expect(receiver.attemptsOf(id)).toHaveLength(1);
    expect(receiver.requests).toHaveLength(10);
    const listed = await webhooks.list({ appId });
    expect(listed.map((event) => [event.status, event.attempts, event.deliveries.length])).toEqual(
      Array(10).fill(['delivered', 1, 1]),
    );
  });

  it('delivers a burst committed in one transaction, in batches, while the database connections are terminated', async () => {
    const { appId, receiver } = await appWithReceiver(() => ({ status: 200, delayMs: 5 }));
    const ids = await t.dataSource.transaction(async (manager) => {
      const emitted: string[] = [];
      for (let n = 0; n < 300; n++) emitted.push(await webhooks.emit(manager, transferUpdate(appId)));
      return emitted;
    });
    // Twice during the burst, every connection of the application's pool is cut (batches in flight fail
    // and are tried again on fresh connections).
    for (const after of [20, 150]) {
      await pollUntil(`${after} events acknowledged`, () => receiver.acknowledged().length >= after);
      await t.dataSource.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = 'wallet-api'`,
      );
    }
    await pollUntil(
      'all 300 events recorded delivered',
      async () => {
        const [row] = (await t.dataSource.query(
          `SELECT count(*)::int AS n FROM webhook_events WHERE id = ANY($1) AND status = 'delivered'`,
          [ids],
        )) as { n: number }[];
        return row.n === ids.length;
      },
      60_000,
    );
    for (const id of ids) expect(receiver.acknowledged(id).length).toBeGreaterThanOrEqual(1);
    // At most one recorded attempt per POST the receiver saw (a batch tried again adds none twice), and exactly
    // one delivered attempt per event. On a loaded machine a POST can outlast WEBHOOK_TIMEOUT_MS (5 s here):
    // that attempt is recorded failed without a status and retried, never a 200 recorded as failed.
    const attempts = (await t.dataSource.query(
      `SELECT event_id, outcome, status_code FROM webhook_attempts WHERE event_id = ANY($1)`,
      [ids],
    )) as { event_id: string; outcome: string; status_code: number | null }[];
    const delivered = attempts.filter((row) => row.outcome === 'delivered');
    expect(delivered.every((row) => row.status_code === 200)).toBe(true);
    expect(delivered).toHaveLength(ids.length);
    expect(new Set(delivered.map((row) => row.event_id)).size).toBe(ids.length);
    expect(
      attempts.filter((row) => row.outcome !== 'delivered').every((row) => row.status_code === null),
    ).toBe(true);
    expect(attempts.length).toBeLessThanOrEqual(receiver.requests.length);
    // The relay queued the burst as batch jobs of at most 50 events (not a job per event); each batch job
    // completed once every one of its events had its outcome recorded.
    const eventsOf = (job: { data: unknown }) => (job.data as { events: string[] }).events;
    const batches = (
      await t.app.get(QueueFactory).queue(QUEUES.webhooks).getJobs(['completed', 'active', 'wait'])
    ).filter((job) => job.name === JOBS.deliverWebhooks && eventsOf(job).some((id) => ids.includes(id)));
    const batched = batches.flatMap(eventsOf);
    expect(new Set(batched)).toEqual(new Set(ids));
    expect(batches.every((job) => eventsOf(job).length <= 50)).toBe(true);
    expect(batches.length).toBeLessThan(ids.length / 10);
  }, 90_000);

  it("records an attempt's receiver without its query string (a receiver's token there outlives its rotation)", async () => {
    const receiver = await WebhookReceiver.start();
    receivers.push(receiver);
    const { appId } = await registerClient(t.app, 'receiver with a token in its URL');
    await t.app
      .get(AppsService)
      .setWebhook(appId, receiver.url('/hooks/wallet?token=r3ceiver-s3cret#frag'), cliActor('test'));
    const eventId = await emit(transferUpdate(appId));
    await waitForStatus(appId, eventId, 'delivered');
    // The receiver was called at its whole URL, the token included; the attempt row keeps origin and path.
    expect(receiver.acknowledged(eventId).map((request) => request.path)).toEqual([
      '/hooks/wallet?token=r3ceiver-s3cret',
    ]);
    expect(
      await t.dataSource.query('SELECT url FROM webhook_attempts WHERE event_id = $1', [eventId]),
    ).toEqual([{ url: receiver.url('/hooks/wallet') }]);
  });

  it('records an outcome once: a repeated record changes nothing, a stale attempt leaves the event to its new holder', async () => {
    const delivery = t.app.get(WebhookDeliveryService);
    const { appId } = await registerClient(t.app, 'record fencing');
    // Written as pending and leased by attempt 2 (as a claim leaves it), without any delivery job.
    const eventId = randomUUID();
    await t.dataSource.query(
      `INSERT INTO webhook_events (id, app_id, event, subject, payload, status, attempts, lease_until, next_attempt_at)
       VALUES ($1, $2, 'transfer_update', NULL, '{}', 'pending', 2, now() + interval '1 hour', NULL)`,
      [eventId, appId],
    );
    const attempt = (n: number, startedAtMs: number) => ({
      id: eventId,
      attempt: n,
      url: 'http://example.test/',
      startedAtMs,
      durationMs: 3,
      statusCode: 200,
      delivered: true,
      error: null,
      retryDelayMs: null,
    });
    const record = (items: ReturnType<typeof attempt>[]) => delivery['recordBatch'](items);
    const state = async () =>
      (
        (await t.dataSource.query(
          `SELECT status, lease_until IS NOT NULL AS leased, (SELECT count(*)::int FROM webhook_attempts WHERE event_id = $1) AS rows
             FROM webhook_events WHERE id = $1`,
          [eventId],
        )) as { status: string; leased: boolean; rows: number }[]
      )[0];

    // Attempt 1 lost its lease to attempt 2: its POST is recorded, the event stays with attempt 2.
    await expect(record([attempt(1, Date.now() - 5_000)])).resolves.toEqual(['delivered']);
    expect(await state()).toEqual({ status: 'pending', leased: true, rows: 1 });
    // Attempt 2 records; the same statement again (a retry after a lost connection) adds nothing.
    const second = attempt(2, Date.now());
    await record([second]);
    await record([second]);
    expect(await state()).toEqual({ status: 'delivered', leased: false, rows: 2 });
  });
});

describe(`webhook SSRF protection (${backend} queue backend, WEBHOOK_ALLOW_PRIVATE_URLS unset)`, () => {
  let s: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    s = await startTestApp({ runWorker: true, env: { ...FAST, ...isolatedRedisEnv(12) } });
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await receiver?.close();
    await s?.close();
  });

  it('refuses loopback, link-local and private webhook URLs at registration', async () => {
    expect(s.config.webhookAllowPrivateUrls).toBe(false);
    const { appId } = await registerClient(s.app, 'ssrf');
    const apps = s.app.get(AppsService);
    for (const url of [
      `http://127.0.0.1:${receiver.port}/webhooks`,
      `http://localhost:${receiver.port}/webhooks`, // a hostname that resolves to 127.0.0.1
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://169.254.169.254/',
      'http://10.0.0.1/',
    ]) {
      const error = await apps.setWebhook(appId, url, cliActor('test')).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(ValidationFailedError);
      expect((error as ValidationFailedError).items).toEqual([
        expect.objectContaining({
          path: 'webhookUrl',
          type: 'invalid',
          message: expect.stringMatching(/public/),
        }),
      ]);
    }
    expect((await apps.list()).find((app) => app.appId === appId)?.webhookUrl).toBeNull();
  });

  it('refuses a private address again at delivery time (a URL that got past registration, or DNS that changed)', async () => {
    const webhooks = s.app.get(WebhooksService);
    for (const url of [
      receiver.url('/literal'),
      `http://[::ffff:127.0.0.1]:${receiver.port}/mapped`, // IPv4-mapped IPv6 literal
      `http://localhost:${receiver.port}/hostname`, // resolves to 127.0.0.1 only when connecting
    ]) {
      const { appId } = await registerClient(s.app, 'rebound');
      await s.dataSource.query('UPDATE applications SET webhook_url = $2 WHERE id = $1', [appId, url]);
      const eventId = await s.dataSource.transaction((manager) =>
        webhooks.emit(manager, { appId, event: WEBHOOK_EVENTS.test, data: { message: 'ssrf' } }),
      );
      await pollUntil(`event to ${url} to fail`, async () =>
        (await webhooks.list({ appId })).some((event) => event.status === 'failed'),
      );
      const [failed] = await webhooks.list({ appId });
      expect(failed).toMatchObject({ eventId, status: 'failed', attempts: 4 });
      expect(failed.lastError).toMatch(/non-public address/);
      for (const delivery of failed.deliveries) {
        expect(delivery).toMatchObject({ outcome: 'failed', statusCode: null });
        expect(delivery.error).toMatch(/non-public address/);
      }
    }
    expect(receiver.requests).toEqual([]);
  });
});
