import { randomUUID } from 'node:crypto';
import type { JSONWebKeySet } from 'jose';
import pg from 'pg';
import request from 'supertest';
import { functionDefinitions } from '../migrations/sql.js';
import { AppsService } from '../src/modules/apps/apps.service.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import { PruneEventsProcessor } from '../src/modules/webhooks/prune-events.processor.js';
import { WEBHOOK_EVENTS } from '../src/modules/webhooks/webhook-events.js';
import { WebhooksService, type EmitInput } from '../src/modules/webhooks/webhooks.service.js';
import { EVENT_TYPES, type EventResponseDto } from '../src/modules/webhooks/dto/event.dto.js';
import { eventsFeedQuery } from '../src/modules/webhooks/events-feed.service.js';
import { encodeMicrosecondCursor } from '../src/common/http/pagination.js';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import { failDeletesWhenLeft } from './support/database.js';
import { flattenPlan, preparedPlan, rowsRead, type PlanNode } from './support/plans.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { isolatedRedisEnv, pollUntil, verifyWebhook, WebhookReceiver } from './support/webhook-receiver.js';

const FAST = {
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_RETRY_DELAYS: '100ms,200ms',
  WEBHOOK_SWEEP_INTERVAL_MS: '200',
  WEBHOOK_TIMEOUT_MS: '1000',
};

interface Caller {
  client: TestClient;
  auth: string;
}

const transferUpdate = (appId: string): EmitInput => {
  const uuid = randomUUID();
  return {
    appId,
    event: WEBHOOK_EVENTS.transferUpdate,
    subject: uuid,
    data: { uuid, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
  };
};

const registerCaller = async (t: TestApp, name: string): Promise<Caller> => {
  const client = await registerClient(t.app, name);
  return { client, auth: `Bearer ${await accessToken(t.http, client)}` };
};

/** Every page of the feed, following X-Next-Cursor through `after`; the pages as served. */
const allPages = async (t: TestApp, caller: Caller, query: Record<string, string> = {}) => {
  const pages: EventResponseDto[][] = [];
  let after: string | undefined;
  for (;;) {
    const response = await request(t.http)
      .get('/v1/events')
      .query({ ...query, ...(after ? { after } : {}) })
      .set('Authorization', caller.auth);
    expect(response.status).toBe(200);
    pages.push(response.body as EventResponseDto[]);
    after = response.headers['x-next-cursor'] as string | undefined;
    if (!after) return pages;
    expect(pages.length).toBeLessThan(100);
  }
};

const getEvent = (t: TestApp, caller: Caller, id: string) =>
  request(t.http).get(`/v1/events/${id}`).set('Authorization', caller.auth);

describe('events feed (worker in process)', () => {
  let t: TestApp;
  let webhooks: WebhooksService;
  let a: Caller;
  let b: Caller;
  const receivers: WebhookReceiver[] = [];

  const emit = (inputs: EmitInput[]) =>
    t.dataSource.transaction(async (manager) => {
      const ids: string[] = [];
      for (const input of inputs) ids.push(await webhooks.emit(manager, input));
      return ids;
    });

  beforeAll(async () => {
    t = await startTestApp({ runWorker: true, env: { ...FAST, ...isolatedRedisEnv(13) } });
    webhooks = t.app.get(WebhooksService);
    a = await registerCaller(t, 'feed a');
    b = await registerCaller(t, 'feed b');
  });
  afterAll(async () => {
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await t?.close();
  });

  it('pages oldest first across pages with no gap and no repeat, by `after` and by `cursor`', async () => {
    const c = await registerCaller(t, 'feed paging');
    // Events of one transaction share created_at (the id orders them); the others follow in time.
    const emitted = [
      ...(await emit(Array.from({ length: 5 }, () => transferUpdate(c.client.appId)))),
      ...(await emit([transferUpdate(c.client.appId)])),
      ...(await emit(Array.from({ length: 4 }, () => transferUpdate(c.client.appId)))),
    ];
    const pages = await allPages(t, c, { limit: '3' });
    expect(pages.map((page) => page.length)).toEqual([3, 3, 3, 1]);
    const served = pages.flat();
    expect(served.map((event) => event.id).sort()).toEqual([...emitted].sort());
    expect(new Set(served.map((event) => event.id)).size).toBe(emitted.length);
    // Oldest first: the three transactions in order; within one, by id.
    const groups = [emitted.slice(0, 5), emitted.slice(5, 6), emitted.slice(6)];
    expect(served.map((event) => event.id)).toEqual(groups.flatMap((ids) => [...ids].sort()));

    // `cursor` (as on every list route) is the same position as `after`.
    const first = await request(t.http).get('/v1/events?limit=4').set('Authorization', c.auth);
    const cursor = first.headers['x-next-cursor'] as string;
    const byCursor = await request(t.http)
      .get('/v1/events')
      .query({ limit: 100, cursor })
      .set('Authorization', c.auth);
    expect(byCursor.status).toBe(200);
    expect(byCursor.headers['x-next-cursor']).toBeUndefined();
    expect((byCursor.body as EventResponseDto[]).map((event) => event.id)).toEqual(
      served.slice(4).map((event) => event.id),
    );
  });

  it('refuses a bad cursor, a bad type and an out-of-range limit with the validation body', async () => {
    for (const query of [
      { after: 'bm90IGEgY3Vyc29y' },
      { type: 'transfer_updated' },
      { limit: '0' },
      { limit: '501' },
    ]) {
      const response = await request(t.http).get('/v1/events').query(query).set('Authorization', a.auth);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        name: 'ValidationError',
        message: expect.any(String),
        detail: {
          items: [
            expect.objectContaining({
              path: Object.keys(query)[0],
              type: 'invalid',
            }),
          ],
        },
      });
    }
  });

  it('documents the query of the list once each: type, after, limit, cursor', () => {
    const parameters = (t.openApi.paths['/events']?.get?.parameters ?? []) as {
      name: string;
      in: string;
    }[];
    expect(
      parameters
        .filter((parameter) => parameter.in === 'query')
        .map((parameter) => parameter.name)
        .sort(),
    ).toEqual(['after', 'cursor', 'limit', 'type']);
  });

  it('filters by type', async () => {
    const c = await registerCaller(t, 'feed types');
    const transfers = await emit([transferUpdate(c.client.appId), transferUpdate(c.client.appId)]);
    const { eventId: test } = await webhooks.sendTest(c.client.appId, cliActor('test'));
    const onlyTests = (await allPages(t, c, { type: 'webhook_test' })).flat();
    expect(onlyTests.map((event) => event.id)).toEqual([test]);
    expect(onlyTests[0]).toMatchObject({ event: 'webhook_test', data: { message: expect.any(String) } });
    const onlyTransfers = (await allPages(t, c, { type: 'transfer_update' })).flat();
    expect(onlyTransfers.map((event) => event.id).sort()).toEqual([...transfers].sort());
    expect((await allPages(t, c, { type: 'kyc_steep_update' })).flat()).toEqual([]);

    // Without a type the types' ranges are merged in the feed's order, a page's cursor crossing from one to another.
    const [late] = await emit([transferUpdate(c.client.appId)]);
    const everything = (await allPages(t, c, { limit: '1' })).flat();
    expect(everything.map((event) => event.id)).toEqual([...[...transfers].sort(), test, late]);
  });

  it('reads only event names it lists without a type: the SQL functions write names of EVENT_TYPES', async () => {
    // The feed without a type reads one range per name of EVENT_TYPES (decision 0064): an event written under
    // another name would be left out. TypeScript producers take a WebhookEventName; these are the SQL ones.
    const definitions = await functionDefinitions((sql, params) => t.dataSource.query(sql, params));
    const names = Object.values(definitions).flatMap((definition) =>
      definition
        .split(/INSERT INTO webhook_events/i)
        .slice(1)
        .flatMap((insert) => [...insert.split(';')[0].matchAll(/'([a-z]+(?:_[a-z]+)+)'/g)].map((m) => m[1])),
    );
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((name) => !(EVENT_TYPES as readonly string[]).includes(name))).toEqual([]);
  });

  it('reads about one page of rows for a page of any type, however rare: one index range per type', async () => {
    const c = await registerCaller(t, 'feed plans');
    const other = await registerCaller(t, 'feed plans, the other application');
    // 20,000 delivered events, 3 of them webhook_test (a rare type), none kyc_steep_update, among 180,000 of another
    // application (one shared database), one every 0.3 s up to now. Written delivered, without the outbox's NOTIFY
    // (session_replication_role skips the trigger): the worker of this suite has nothing to do with them.
    await t.dataSource.transaction(async (manager) => {
      await manager.query('SET LOCAL session_replication_role = replica');
      await manager.query(
        `INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at, created_at,
                                     delivered_at)
         SELECT uuidv7(), CASE WHEN i % 10 = 0 THEN $1::uuid ELSE $2::uuid END, e.name, NULL,
                jsonb_build_object('event', e.name, 'timestamp', 0, 'data', '{}'::jsonb),
                'delivered', NULL, now() - make_interval(secs => (200000 - i) * 0.3), now()
           FROM generate_series(1, 200000) AS i,
                LATERAL (SELECT CASE WHEN i % 60000 = 0 THEN 'webhook_test' ELSE 'transfer_update' END AS name) e`,
        [c.client.appId, other.client.appId],
      );
    });
    await t.dataSource.query('VACUUM ANALYZE webhook_events');
    const tests = (await allPages(t, c, { type: 'webhook_test' })).flat();
    expect(tests).toHaveLength(3);
    expect((await allPages(t, c, { type: 'kyc_steep_update' })).flat()).toEqual([]);

    const position = (event: { micros: string; id: string }) => ({ micros: event.micros, id: event.id });
    const [middle] = (await t.dataSource.query(
      `SELECT (extract(epoch FROM created_at) * 1000000)::bigint::text AS micros, id::text AS id
         FROM webhook_events WHERE app_id = $1 ORDER BY created_at, id OFFSET 10000 LIMIT 1`,
      [c.client.appId],
    )) as { micros: string; id: string }[];
    const [firstTest] = (await t.dataSource.query(
      `SELECT (extract(epoch FROM created_at) * 1000000)::bigint::text AS micros, id::text AS id
         FROM webhook_events WHERE id = $1`,
      [tests[0].id],
    )) as { micros: string; id: string }[];
    // The cursor the feed served is the position the query takes.
    const served = await request(t.http)
      .get('/v1/events')
      .query({ type: 'webhook_test', limit: 1 })
      .set('Authorization', c.auth);
    expect(served.headers['x-next-cursor']).toBe(encodeMicrosecondCursor(firstTest.micros, firstTest.id));

    const cases: [string, string | undefined, { micros: string; id: string } | undefined][] = [
      ['a rare type', 'webhook_test', undefined],
      ['a rare type after a cursor', 'webhook_test', position(firstTest)],
      ['a type with no event', 'kyc_steep_update', undefined],
      ['the common type', 'transfer_update', undefined],
      ['the common type after a cursor', 'transfer_update', position(middle)],
      ['every type', undefined, undefined],
      ['every type after a cursor', undefined, position(middle)],
    ];
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const plans: Record<string, unknown> = {};
      const expected: Record<string, unknown> = {};
      for (const [label, type, after] of cases) {
        const { text, values } = eventsFeedQuery(c.client.appId, type, 101, after);
        for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
          const nodes = await preparedPlan(db, text, values, mode);
          const read = rowsRead(nodes, 'webhook_events');
          plans[`${label}, ${mode}`] = {
            seqScan: nodes.some((node) => node['Node Type'].includes('Seq Scan')),
            sort: nodes.some((node) => node['Node Type'] === 'Sort'),
            indexes: [...new Set(nodes.flatMap((node) => node['Index Name'] ?? []))],
            // A page of 101 rows, and the row each other type's range holds ready for the merge.
            aboutOnePage: read <= 101 + EVENT_TYPES.length,
          };
          expected[`${label}, ${mode}`] = {
            seqScan: false,
            sort: false,
            indexes: ['idx_webhook_events_app_event_created'],
            aboutOnePage: true,
          };
        }
      }
      expect(plans).toEqual(expected);

      // The pruner's index holds the events no longer pending (what it deletes): its statement still reads it.
      const [{ 'QUERY PLAN': prune }] = (await t.dataSource.query(
        `EXPLAIN (FORMAT JSON) SELECT id FROM webhook_events
          WHERE created_at < now() - ($1::int * interval '1 day') AND status <> 'pending' LIMIT $2`,
        [30, 5000],
      )) as { 'QUERY PLAN': { Plan: PlanNode }[] }[];
      expect(flattenPlan(prune[0].Plan).flatMap((node) => node['Index Name'] ?? [])).toEqual([
        'idx_webhook_events_created',
      ]);
    } finally {
      await db.end();
    }
  }, 120_000);

  it("never shows another application's event: 404 on /events/{id}, absent from the list", async () => {
    const [ofB] = await emit([transferUpdate(b.client.appId)]);
    const [ofA] = await emit([transferUpdate(a.client.appId)]);
    const response = await getEvent(t, a, ofB);
    expect(response.status).toBe(404);
    expect(response.body).toEqual({
      name: 'NotFoundError',
      message: 'Resource not found',
      detail: { item: ofB },
    });
    const unknown = randomUUID();
    expect((await getEvent(t, a, unknown)).body).toEqual({
      name: 'NotFoundError',
      message: 'Resource not found',
      detail: { item: unknown },
    });
    const listed = (await allPages(t, a)).flat().map((event) => event.id);
    expect(listed).toContain(ofA);
    expect(listed).not.toContain(ofB);
    expect((await getEvent(t, b, ofB)).status).toBe(200);
  });

  it('answers a user (bearer) token with 401, like the other client-credentials routes', async () => {
    const [ofA] = await emit([transferUpdate(a.client.appId)]);
    const userToken = `Bearer ${await subjectToken(a.client, randomUUID())}`;
    for (const path of ['/v1/events', `/v1/events/${ofA}`]) {
      const response = await request(t.http).get(path).set('Authorization', userToken);
      expect(response.status).toBe(401);
      expect(response.body).toStrictEqual({ name: 'UnauthorizedError', message: expect.any(String) });
      const anonymous = await request(t.http).get(path);
      expect(anonymous.status).toBe(401);
    }
  });

  it('shows exactly the payload the receiver verified, under the Webhook-Id, and the delivery', async () => {
    const receiver = await WebhookReceiver.start();
    receivers.push(receiver);
    const c = await registerCaller(t, 'feed receiver');
    await t.app.get(AppsService).setWebhook(c.client.appId, receiver.url(), cliActor('test'));
    const jwks = (await request(t.http).get('/v1/.well-known/jwks.json')).body as JSONWebKeySet;
    const [eventId] = await emit([transferUpdate(c.client.appId)]);
    await pollUntil('the webhook', () => receiver.acknowledged(eventId).length === 1);
    await pollUntil(
      'the delivery recorded',
      async () => ((await getEvent(t, c, eventId)).body as EventResponseDto).delivery.state === 'delivered',
    );
    const { payload } = await verifyWebhook(receiver.acknowledged(eventId)[0].body, jwks);
    const response = await getEvent(t, c, eventId);
    expect(response.status).toBe(200);
    const { id, delivery, ...carried } = response.body as EventResponseDto;
    expect(id).toBe(receiver.acknowledged(eventId)[0].id);
    expect(carried).toStrictEqual(payload);
    expect(Number.isInteger(carried.timestamp)).toBe(true);
    // lastAttemptAt is the attempt's start, as its attempts row has it (not the claim's time: decision 0095).
    const [attempt] = (await t.dataSource.query(
      `SELECT started_at FROM webhook_attempts WHERE event_id = $1`,
      [eventId],
    )) as { started_at: Date }[];
    expect(delivery).toStrictEqual({
      state: 'delivered',
      attempts: 1,
      lastAttemptAt: attempt.started_at.toISOString(),
      deliveredAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    // The list serves the same object.
    expect((await allPages(t, c)).flat()).toStrictEqual([response.body]);
  });

  it('keeps the events of an application without a webhook URL, failed once the attempts run out', async () => {
    const c = await registerCaller(t, 'feed no url');
    const [eventId] = await emit([transferUpdate(c.client.appId)]);
    await pollUntil(
      'the attempts to run out',
      async () => ((await getEvent(t, c, eventId)).body as EventResponseDto).delivery.state === 'failed',
    );
    const { delivery } = (await getEvent(t, c, eventId)).body as EventResponseDto;
    expect(delivery).toStrictEqual({
      state: 'failed',
      attempts: 3,
      lastAttemptAt: expect.any(String),
      deliveredAt: null,
    });
  });

  it('prunes only events older than the retention that are no longer pending, with their attempts', async () => {
    const c = await registerCaller(t, 'feed retention');
    const [oldDelivered, oldFailed, oldPending, recentDelivered] = await emit(
      Array.from({ length: 4 }, () => transferUpdate(c.client.appId)),
    );
    // No URL is set: once every attempt has failed no worker touches them; then they are set as the test needs
    // (the pending one not due before tomorrow).
    await pollUntil('the attempts to run out', async () => {
      const rows = (await t.dataSource.query(
        `SELECT count(*)::int AS n FROM webhook_events WHERE app_id = $1 AND status = 'failed'`,
        [c.client.appId],
      )) as { n: number }[];
      return rows[0].n === 4;
    });
    await t.dataSource.query(
      `UPDATE webhook_events SET status = CASE WHEN id = $3 THEN 'failed' WHEN id = $4 THEN 'pending' ELSE 'delivered' END,
              next_attempt_at = now() + interval '1 day',
              created_at = CASE WHEN id = $5 THEN now() - interval '29 days' ELSE now() - interval '31 days' END
        WHERE id = ANY($1::uuid[]) AND app_id = $2`,
      [
        [oldDelivered, oldFailed, oldPending, recentDelivered],
        c.client.appId,
        oldFailed,
        oldPending,
        recentDelivered,
      ],
    );
    await t.dataSource.query(
      `INSERT INTO webhook_attempts (event_id, attempt, url, started_at, duration_ms, status_code, outcome, error)
       SELECT id, 1, 'http://127.0.0.1/', now() - interval '31 days', 5, 200, 'delivered', NULL
         FROM webhook_events WHERE id = ANY($1::uuid[])`,
      [[oldDelivered, recentDelivered]],
    );
    expect(t.config.eventsRetentionDays).toBe(30);
    const deleted = await t.app.get(PruneEventsProcessor).prune();
    expect(deleted).toBeGreaterThanOrEqual(2);
    const left = (await allPages(t, c)).flat().map((event) => event.id);
    expect(left.sort()).toEqual([oldPending, recentDelivered].sort());
    for (const gone of [oldDelivered, oldFailed]) expect((await getEvent(t, c, gone)).status).toBe(404);
    // The attempts of the pruned events went with them; the kept ones keep theirs.
    const attempts = (await t.dataSource.query(
      'SELECT DISTINCT event_id FROM webhook_attempts WHERE event_id = ANY($1::uuid[])',
      [[oldDelivered, oldFailed, oldPending, recentDelivered]],
    )) as { event_id: string }[];
    expect(attempts.map((row) => row.event_id).sort()).toEqual([oldPending, recentDelivered].sort());
  });

  it('a prune that fails part way says how many events it deleted before the failure (decision 0078)', async () => {
    const appId = randomUUID();
    await t.dataSource.query(
      `INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at, created_at)
       SELECT gen_random_uuid(), $1, 'transfer_update', 's' || i, '{}', 'delivered', now(), now() - interval '31 days'
         FROM generate_series(1, 10) i`,
      [appId],
    );
    const left = async () =>
      (
        (await t.dataSource.query('SELECT count(*)::int AS n FROM webhook_events WHERE app_id = $1', [
          appId,
        ])) as { n: number }[]
      )[0].n;
    // The third statement fails (4 left): the first two deleted 6, each committed on its own.
    const removeFault = await failDeletesWhenLeft(t.dataSource, 'webhook_events', `app_id = '${appId}'`, 4);
    const pruner = t.app.get(PruneEventsProcessor);
    try {
      // The job fails with this error: its message is the worker's "job failed" line and the job's failedReason.
      await expect(pruner.prune(30, 3)).rejects.toMatchObject({
        name: 'BatchedDeleteError',
        deleted: 6,
        statements: 2,
        message:
          'deleting from webhook_events failed after 6 rows in 2 statements: a delete the test refuses',
      });
    } finally {
      await removeFault();
    }
    expect(await left()).toBe(4);
    expect(await pruner.prune(30, 3)).toBe(4);
    expect(await left()).toBe(0);
  });
});

describe('events feed across a worker restart', () => {
  let api: TestApp;
  let worker: TestApp | undefined;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    // The API alone: events are written to the outbox, nothing delivers them.
    api = await startTestApp({ runWorker: false, env: { ...FAST, ...isolatedRedisEnv(14) } });
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await worker?.close();
    await receiver?.close();
    await api?.close();
  });

  it('shows events produced while no worker runs as pending, then delivered once a worker starts', async () => {
    const c = await registerCaller(api, 'feed restart');
    await api.app.get(AppsService).setWebhook(c.client.appId, receiver.url(), cliActor('test'));
    const webhooks = api.app.get(WebhooksService);
    const produced: string[] = [];
    for (let i = 0; i < 5; i += 1)
      produced.push((await webhooks.sendTest(c.client.appId, cliActor('test'))).eventId);

    const whileDown = (await allPages(api, c, { limit: '2' })).flat();
    expect(whileDown.map((event) => event.id)).toEqual(produced);
    for (const event of whileDown) {
      expect(event.delivery).toStrictEqual({
        state: 'pending',
        attempts: 0,
        lastAttemptAt: null,
        deliveredAt: null,
      });
    }
    expect(receiver.requests).toHaveLength(0);

    // The worker's passport strategies replace the API's in this one process (passport keeps one registry):
    // with the API's DATA_DIR they verify with the same signing keys, as two processes of one deployment do.
    worker = await startTestApp({
      runWorker: true,
      databaseUrl: api.databaseUrl,
      env: { ...FAST, ...isolatedRedisEnv(14), DATA_DIR: api.dataDir },
    });
    await pollUntil('every event delivered', async () =>
      (await allPages(api, c)).flat().every((event) => event.delivery.state === 'delivered'),
    );
    const after = (await allPages(api, c)).flat();
    expect(after.map((event) => event.id)).toEqual(whileDown.map((event) => event.id));
    for (const id of produced) expect(receiver.acknowledged(id).length).toBeGreaterThanOrEqual(1);
  });
});
