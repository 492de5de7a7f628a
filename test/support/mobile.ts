import type { Server } from 'node:http';
import request from 'supertest';
import type { DataSource } from 'typeorm';

/** The interface's error rule 5 (SMS and SIM swap routes): exactly `NO ROUTES`, as text/html, with the given status. */
export function expectNoRoutes(response: request.Response, status: 400 | 401 = 400): void {
  expect({ status: response.status, type: response.headers['content-type'], body: response.text }).toEqual({
    status,
    type: expect.stringMatching(/^text\/html/),
    body: 'NO ROUTES',
  });
}

/** POST /v1/mobile/sms of a short text to `dnis`. */
export const sendSms = (http: Server, authorization: string, dnis: string) =>
  request(http).post('/v1/mobile/sms').set('Authorization', authorization).send({ dnis, message: 'Hola' });

/** The SMS an application has stored (what the rate limits count). */
export async function storedSms(dataSource: DataSource, appId: string): Promise<number> {
  const [row] = (await dataSource.query('SELECT count(*)::int AS n FROM sms_messages WHERE app_id = $1', [
    appId,
  ])) as { n: number }[];
  return row.n;
}

/** `count` delivered messages of an application sent two hours ago: a busy day, a quiet last hour. */
export async function seedBusyDay(dataSource: DataSource, appId: string, count: number): Promise<void> {
  await dataSource.query(
    `INSERT INTO sms_messages (id, app_id, dnis, status, created_at)
     SELECT gen_random_uuid(), $1, '5411' || lpad(g::text, 8, '0'), 'DELIVRD', now() - interval '2 hours'
       FROM generate_series(1, $2::int) g`,
    [appId, count],
  );
}

/**
 * Sends a request that a limit refuses, and checks its Retry-After: the whole seconds, rounded up, from the instant
 * the request was judged (between its sending and its answer) until the counted message created at `createdAt`
 * (as the database recorded it) leaves the limit's window of `windowSeconds`. Bounds, not a time: a slow answer
 * widens them. The database's microseconds, dropped by a Date, and the milliseconds Date.now() drops are allowed
 * for (1 ms each).
 */
export async function expectRefusedUntil(
  send: () => PromiseLike<request.Response>,
  createdAt: Date,
  windowSeconds: number,
): Promise<void> {
  const sentAt = Date.now();
  const response = await send();
  const answeredAt = Date.now();
  expectNoRoutes(response);
  const leaves = createdAt.getTime() + windowSeconds * 1000;
  const seconds = Number(response.headers['retry-after']);
  expect(seconds).toBeGreaterThanOrEqual(Math.max(1, Math.ceil((leaves - answeredAt - 1) / 1000)));
  expect(seconds).toBeLessThanOrEqual(Math.ceil((leaves + 1 - sentAt) / 1000));
  expect(seconds).toBeLessThanOrEqual(windowSeconds);
}

/** Moves a stored message `ago` (an interval) back in time; answers its created_at as the database now holds it. */
export async function backdateSms(dataSource: DataSource, messageId: string, ago: string): Promise<Date> {
  const [[row]] = (await dataSource.query(
    `UPDATE sms_messages SET created_at = created_at - $2::interval WHERE id = $1 RETURNING created_at`,
    [messageId, ago],
  )) as [{ created_at: Date }[], number];
  return row.created_at;
}
