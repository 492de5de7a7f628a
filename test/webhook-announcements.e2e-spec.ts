import type { JSONWebKeySet } from 'jose';
import pg from 'pg';
import request from 'supertest';
import { AppsService } from '../src/modules/apps/apps.service.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import { WebhookAnnouncer } from '../src/modules/webhooks/webhook-announcer.js';
import { WEBHOOK_EVENTS, WEBHOOK_NOTIFY_CHANNEL } from '../src/modules/webhooks/webhook-events.js';
import { WebhooksService } from '../src/modules/webhooks/webhooks.service.js';
import { accessToken, registerClient } from './support/auth.js';
import { bearer } from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { postTransfer, transferBody } from './support/transfers.js';
import { createOwner, openAccount, setBalance, type AccountInfo } from './support/wallet.js';
import {
  isolatedRedisEnv,
  pollUntil,
  sleep,
  verifyWebhook,
  WebhookReceiver,
} from './support/webhook-receiver.js';

const backend = process.env.TEST_REDIS_URL ? 'redis' : 'postgres';

/**
 * Committed outbox events reach the relay through announcements sent after their transaction commits
 * (docs/decisions/0039-announce-after-commit.md), not through a NOTIFY inside it. The sweeper looks only once, at
 * start (its interval is ten minutes here), so whatever these tests see delivered came through an announcement.
 */
describe(`webhook announcements after commit (${backend} queue backend, worker in process)`, () => {
  let t: TestApp;
  let listener: pg.Client;
  /** Every payload the channel carried, in arrival order. */
  const payloads: string[] = [];
  let receiver: WebhookReceiver;
  let jwks: JSONWebKeySet;
  let token: string;
  let appId: string;
  let payer: AccountInfo;
  let payee: AccountInfo;

  beforeAll(async () => {
    t = await startTestApp({
      runWorker: true,
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        WEBHOOK_SWEEP_INTERVAL_MS: '600000',
        ...isolatedRedisEnv(15),
      },
    });
    listener = new pg.Client({ connectionString: t.databaseUrl });
    await listener.connect();
    listener.on('notification', (message) => {
      if (message.channel === WEBHOOK_NOTIFY_CHANNEL && message.payload) payloads.push(message.payload);
    });
    await listener.query(`LISTEN ${WEBHOOK_NOTIFY_CHANNEL}`);
    receiver = await WebhookReceiver.start();
    const client = await registerClient(t.app, 'announcements');
    appId = client.appId;
    await t.app.get(AppsService).setWebhook(appId, receiver.url(), cliActor('test'));
    token = await accessToken(t.http, client);
    payer = await openAccount(t.http, token, appId, await createOwner(t.http, token));
    payee = await openAccount(t.http, token, appId, await createOwner(t.http, token));
    await setBalance(t.http, token, payer.uuid, 10_000);
    jwks = (await request(t.http).get('/v1/.well-known/jwks.json')).body as JSONWebKeySet;
  });
  afterAll(async () => {
    await listener?.end();
    await receiver?.close();
    await t?.close();
  });

  /** Every notice announced so far. */
  const notices = () => payloads.flatMap((payload) => payload.split(','));

  /** The transfer_update events of the subjects (transfer uuids), with the notice each is announced by. */
  const eventsOf = async (subjects: string[]) =>
    (await t.dataSource.query(
      `SELECT id::text AS id, subject, id::text || '.' || generation AS notice
         FROM webhook_events WHERE subject = ANY($1::text[]) ORDER BY seq`,
      [subjects],
    )) as { id: string; subject: string; notice: string }[];

  /** The DEPOSIT rows the internal WITHDRAWs created (their receivers' side). */
  const depositsOf = async (withdrawIds: string[]) =>
    (
      (await t.dataSource.query(
        `SELECT linked_transfer_id::text AS id FROM transfers WHERE id = ANY($1::uuid[])`,
        [withdrawIds],
      )) as { id: string }[]
    ).map((row) => row.id);

  it("delivers an internal transfer's transfer_update through its announcement", async () => {
    const created = await postTransfer(t.http, token, transferBody(payer.uuid, payee.cvu, 10)).expect(201);
    const [deposit] = await depositsOf([(created.body as { uuid: string }).uuid]);
    const [event] = await eventsOf([deposit]);
    expect(event.notice).toBe(`${event.id}.0`);
    await pollUntil('the announcement', () => notices().includes(event.notice));
    await pollUntil('the delivery', () => receiver.requests.some((received) => received.id === event.id));
    const received = receiver.requests.find((one) => one.id === event.id)!;
    const { payload } = await verifyWebhook(received.body.trim(), jwks);
    expect(payload).toMatchObject({
      event: 'transfer_update',
      data: { uuid: deposit, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
    });
  });

  it('announces exactly the events each group of concurrent transfers wrote, each once', async () => {
    const before = notices().length;
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => postTransfer(t.http, token, transferBody(payer.uuid, payee.cvu, 1))),
    );
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 201));
    const deposits = await depositsOf(answers.map((answer) => (answer.body as { uuid: string }).uuid));
    const events = await eventsOf(deposits);
    expect(events).toHaveLength(30);
    const expected = events.map((event) => event.notice).sort();
    await pollUntil('every announcement', () => notices().length - before >= 30);
    expect(
      notices()
        .slice(before)
        .filter((notice) => expected.includes(notice))
        .sort(),
    ).toEqual(expected);
    await pollUntil('every delivery', () =>
      events.every((event) => receiver.requests.some((r) => r.id === event.id)),
    );
  });

  it("announces a reversal's two events", async () => {
    const created = await postTransfer(t.http, token, transferBody(payer.uuid, payee.cvu, 20)).expect(201);
    const reversal = await request(t.http)
      .post(`/v1/wallet/transactions/${(created.body as { uuid: string }).uuid}/reversals`)
      .set('Authorization', bearer(token))
      .send({ amount: 5, reason: 'announcement test' })
      .expect(201);
    const withdraw = (reversal.body as { uuid: string }).uuid;
    const [deposit] = await depositsOf([withdraw]);
    const events = await eventsOf([withdraw, deposit]);
    expect(events).toHaveLength(2);
    await pollUntil('both deliveries', () =>
      events.every((event) => receiver.requests.some((received) => received.id === event.id)),
    );
    expect(notices()).toEqual(expect.arrayContaining(events.map((event) => event.notice)));
  });

  it("announces an event emitted in a TypeORM transaction when that transaction commits, and a rolled-back one's never", async () => {
    const webhooks = t.app.get(WebhooksService);
    const data = {
      uuid: 'b8d2f0d4-6a4b-4c55-8f1e-3f1c9a5d2e10',
      movementType: 'DEPOSIT',
      backStatus: 'PENDING',
      newStatus: 'ACCEPTED',
    };
    let committedId = '';
    await t.dataSource.transaction(async (manager) => {
      committedId = await webhooks.emit(manager, { appId, event: WEBHOOK_EVENTS.transferUpdate, data });
      // Written but not committed: nothing is announced yet.
      await sleep(200);
      expect(notices()).not.toContain(`${committedId}.0`);
    });
    await pollUntil('the announcement after commit', () => notices().includes(`${committedId}.0`));

    let rolledBackId = '';
    await expect(
      t.dataSource.transaction(async (manager) => {
        rolledBackId = await webhooks.emit(manager, { appId, event: WEBHOOK_EVENTS.transferUpdate, data });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await pollUntil('the delivery of the committed one', () =>
      receiver.requests.some((r) => r.id === committedId),
    );
    await sleep(300);
    expect(notices().some((notice) => notice.startsWith(rolledBackId))).toBe(false);
  });

  it('splits a large announcement into payloads PostgreSQL accepts (under 8,000 bytes, 150 notices at most)', async () => {
    const before = payloads.length;
    const many = Array.from(
      { length: 400 },
      (_, n) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}.0`,
    );
    t.app.get(WebhookAnnouncer).announce(many);
    await pollUntil(
      'all 400 notices',
      () => payloads.slice(before).flatMap((payload) => payload.split(',')).length >= 400,
    );
    const sent = payloads.slice(before);
    expect(sent.flatMap((payload) => payload.split(','))).toEqual(many);
    for (const payload of sent) {
      expect(Buffer.byteLength(payload)).toBeLessThan(8000);
      expect(payload.split(',').length).toBeLessThanOrEqual(150);
    }
    expect(sent.length).toBeLessThanOrEqual(4);
  });
});
