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
