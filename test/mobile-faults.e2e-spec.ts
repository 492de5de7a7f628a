import pg from 'pg';
import request from 'supertest';
import { JOBS, QUEUES } from '../src/common/queue/queue-names.js';
import { QueueFactory } from '../src/common/queue/queue.factory.js';
import { submitJobId } from '../src/modules/mobile/sms/sms-queue.js';
import { SmsSweeper } from '../src/modules/mobile/sms/sms-sweeper.js';
import { accessToken, registerClient } from './support/auth.js';
import { createTestDatabase } from './support/database.js';
import { bearer } from './support/identity.js';
import { waitFor } from './support/processes.js';
import { startTcpProxy, type Fault, type TcpProxy } from './support/tcp-proxy.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** The simulator's test numbers (README, "SMS and SIM swap"). */
const ORDINARY = '541123456789';
const UNDELIVERABLE = '541100000001';

/** PostgreSQL's simple Query message for COMMIT: 'Q', the length (4 + 7), "COMMIT" and its NUL. */
const COMMIT = Buffer.from('Q\0\0\0\x0bCOMMIT\0', 'latin1');

interface Row {
  status: string;
  delivery_time: Date | null;
  system_delivery_time: Date | null;
  error_code: string | null;
}

/** SMS faults at unlucky moments (decision 0089). Run on either queue backend (test:redis runs it with Redis). */
describe('a simulated receipt whose job gave up during a database fault (decision 0089)', () => {
  let t: TestApp;
  let token: string;
  beforeAll(async () => {
    t = await startTestApp({
      runWorker: true,
      env: {
        // The receipt's job runs 8 s after the submission (the lock below must be taken before: seconds to spare on a
        // loaded machine); each of its statements gives up after 300 ms under a lock, and its five attempts follow
        // each other 100 ms to 800 ms apart (the SMPP back-off it shares).
        SMS_SIM_DELIVERY_DELAY_MS: '8000',
        DB_STATEMENT_TIMEOUT_MS: '300',
        SMPP_RECONNECT_MIN_MS: '100',
        SMPP_RECONNECT_MAX_MS: '1000',
      },
    });
    token = await accessToken(t.http, await registerClient(t.app, 'sms-receipt-fault'));
  });
  afterAll(() => t?.close());

  const row = async (id: string): Promise<Row> =>
    (
      (await t.dataSource.query(
        'SELECT status, delivery_time, system_delivery_time, error_code FROM sms_messages WHERE id = $1',
        [id],
      )) as Row[]
    )[0];
  const send = async (dnis: string): Promise<string> => {
    const sent = await request(t.http)
      .post('/v1/mobile/sms')
      .set('Authorization', bearer(token))
      .send({ dnis, message: 'Your code is 123456' });
    expect(sent.status).toBe(200);
    return (sent.body as { message_id: string }).message_id;
  };

  it('is reported by the sweeper once the fault is over; a late copy of the job changes nothing', async () => {
    const delivered = await send(ORDINARY);
    const undelivered = await send(UNDELIVERABLE);
    const enroute = async () =>
      (await row(delivered)).status === 'ENROUTE' && (await row(undelivered)).status === 'ENROUTE';
    expect(await waitFor(enroute, 5_000, 20)).toBe(true);

    // A database fault on the messages table (a lock held; each statement on it times out) from before the
    // receipts are due until both their jobs have failed for good.
    const queue = t.app.get(QueueFactory).queue(QUEUES.sms);
    const failedReceipts = async () =>
      (await queue.getFailed()).filter((job) => job.name === JOBS.simulatedSmsReceipt);
    const direct = new pg.Client({ connectionString: t.databaseUrl });
    await direct.connect();
    try {
      await direct.query('BEGIN');
      await direct.query('LOCK TABLE sms_messages IN ACCESS EXCLUSIVE MODE');
      expect(await waitFor(async () => (await failedReceipts()).length === 2, 30_000, 200)).toBe(true);
      await direct.query('COMMIT');
    } finally {
      await direct.end();
    }
    const failed = await failedReceipts();
    expect(failed.map((job) => job.attemptsMade)).toEqual([5, 5]);
    // The fault is over and nothing else would report them.
    expect((await row(delivered)).status).toBe('ENROUTE');
    expect((await row(undelivered)).status).toBe('ENROUTE');

    // The sweeper (on its timer: 60 s past the delay) reports each overdue receipt. A sweep answers 0 while the
    // worker's own timed sweep runs, so it is asked until both are reported, and reports each once.
    let reported = 0;
    const sweeper = t.app.get(SmsSweeper);
    expect(await waitFor(async () => (reported += await sweeper.sweep(0)) >= 2, 10_000, 100)).toBe(true);
    expect(reported).toBe(2);
    const first = await row(delivered);
    expect(first).toEqual({
      status: 'DELIVRD',
      delivery_time: expect.any(Date),
      system_delivery_time: expect.any(Date),
      error_code: '000',
    });
    expect(await row(undelivered)).toEqual({
      status: 'UNDELIV',
      delivery_time: null,
      system_delivery_time: expect.any(Date),
      error_code: '001',
    });
    const status = await request(t.http)
      .get(`/v1/mobile/sms/${delivered}`)
      .set('Authorization', bearer(token));
    expect(status.body).toMatchObject({ status: 'DELIVRD', error_code: '000' });

    // The failed jobs run again (as `bullmq` retry would): the message keeps its one final status and its times.
    for (const job of failed) await job.retry();
    expect(
      await waitFor(
        async () =>
          (await Promise.all(failed.map(async (job) => (await queue.getJob(job.id!))?.getState()))).every(
            (state) => state === 'completed',
          ),
        10_000,
      ),
    ).toBe(true);
    expect(await row(delivered)).toEqual(first);
    // Nothing is overdue any more.
    await expect(t.app.get(SmsSweeper).sweep(0)).resolves.toBe(0);
  }, 60_000);
});

describe('POST /mobile/sms whose COMMIT answer is lost (decision 0089)', () => {
  let database: { url: string; drop: () => Promise<void> };
  let proxy: TcpProxy;
  let t: TestApp;
  let direct: pg.Client;
  beforeAll(async () => {
    database = await createTestDatabase();
    proxy = await startTcpProxy(Number(new URL(database.url).port));
    const proxied = new URL(database.url);
    proxied.port = String(proxy.port);
    t = await startTestApp({ databaseUrl: proxied.toString() });
    direct = new pg.Client({ connectionString: database.url });
    await direct.connect();
  });
  afterAll(async () => {
    await direct?.end();
    await t?.close();
    await proxy?.close();
    await database?.drop();
  });

  /** A new application sends one SMS with `fault` armed on the proxy; the answer and what the database holds. */
  const sendWith = async (arm: (proxy: TcpProxy) => Fault) => {
    const client = await registerClient(t.app, 'sms-commit');
    const token = await accessToken(t.http, client);
    const fault = arm(proxy);
    const sent = await request(t.http)
      .post('/v1/mobile/sms')
      .set('Authorization', bearer(token))
      .send({ dnis: ORDINARY, message: 'Your code is 123456' });
    expect(fault.fired).toBe(true);
    const rows = (await direct.query(`SELECT id, status FROM sms_messages WHERE app_id = $1`, [client.appId]))
      .rows as { id: string; status: string }[];
    return { sent, rows };
  };

  it('answers 200 with the stored message and hands it over: the client has no reason to send it again', async () => {
    const { sent, rows } = await sendWith((p) => p.loseAnswerTo(COMMIT));
    expect(sent.status).toBe(200);
    const id = (sent.body as { message_id: string }).message_id;
    expect(rows).toEqual([{ id, status: 'QUEUED' }]);
    const job = await t.app.get(QueueFactory).queue(QUEUES.sms).getJob(submitJobId(id));
    expect(job?.name).toBe(JOBS.submitSms);
  });

  it('answers 503 when the COMMIT never reached the server, and nothing is stored', async () => {
    const { sent, rows } = await sendWith((p) => p.cutBefore(COMMIT));
    expect(sent.status).toBe(503);
    expect(rows).toEqual([]);
  });

  it('with an Idempotency-Key, a retry after either fault sends the message once (decision 0103)', async () => {
    const client = await registerClient(t.app, 'sms-commit-key');
    const token = await accessToken(t.http, client);
    const send = (key: string) =>
      request(t.http)
        .post('/v1/mobile/sms')
        .set('Authorization', bearer(token))
        .set('Idempotency-Key', key)
        .send({ dnis: ORDINARY, message: 'Your code is 123456' });
    const stored = async () =>
      (
        await direct.query(
          `SELECT (SELECT count(*)::int FROM sms_messages WHERE app_id = $1) AS messages,
                  (SELECT count(*)::int FROM idempotency_keys WHERE app_id = $1) AS keys`,
          [client.appId],
        )
      ).rows[0] as { messages: number; keys: number };

    // The COMMIT never reached the server: 503, neither the message nor its key is stored; the retry runs.
    const cut = proxy.cutBefore(COMMIT);
    expect((await send('otp-1')).status).toBe(503);
    expect(cut.fired).toBe(true);
    expect(await stored()).toEqual({ messages: 0, keys: 0 });
    const retried = await send('otp-1');
    expect(retried.status).toBe(200);
    expect(await stored()).toEqual({ messages: 1, keys: 1 });

    // The COMMIT's answer was lost: 200 (decision 0089); a retry the client makes anyway answers the same message.
    const lost = proxy.loseAnswerTo(COMMIT);
    const first = await send('otp-2');
    expect(lost.fired).toBe(true);
    expect(first.status).toBe(200);
    const again = await send('otp-2');
    expect(again.status).toBe(200);
    expect(again.body).toStrictEqual(first.body);
    expect(await stored()).toEqual({ messages: 2, keys: 2 });
  });
});
