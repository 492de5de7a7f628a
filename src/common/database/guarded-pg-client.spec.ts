import pg from 'pg';
import { GuardedPgClient, PG_KEEPALIVE_DELAY_MS } from './guarded-pg-client.js';

/** What pg hands its socket (pg/lib/connection.js: `stream.setKeepAlive(true, delay)` on connect when on). */
function keepAliveOf(client: pg.Client): { on: boolean; delay: number } {
  const connection = (client as unknown as { connection: Record<string, unknown> }).connection;
  return { on: connection._keepAlive === true, delay: connection._keepAliveInitialDelayMillis as number };
}

describe('GuardedPgClient', () => {
  it('turns TCP keepalive on for every pool that uses it (a plain pg client has it off)', () => {
    expect(keepAliveOf(new pg.Client({}))).toStrictEqual({ on: false, delay: 0 });
    expect(keepAliveOf(new GuardedPgClient({ max: 3 } as pg.ClientConfig))).toStrictEqual({
      on: true,
      delay: PG_KEEPALIVE_DELAY_MS,
    });
    expect(keepAliveOf(new GuardedPgClient('postgres://u@localhost/db'))).toStrictEqual({
      on: true,
      delay: PG_KEEPALIVE_DELAY_MS,
    });
  });

  it('keeps what the config says when it says it', () => {
    expect(keepAliveOf(new GuardedPgClient({ keepAlive: false }))).toStrictEqual({
      on: false,
      delay: PG_KEEPALIVE_DELAY_MS,
    });
  });

  it('listens for errors from birth', () => {
    expect(new GuardedPgClient({}).listenerCount('error')).toBe(1);
  });
});
