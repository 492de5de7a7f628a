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

  it("keeps a password the pool made non-enumerable (pg-pool hides it so), and the pool's other settings", () => {
    const config = { host: '127.0.0.1', user: 'wallet', database: 'wallet', max: 3 } as pg.PoolConfig;
    Object.defineProperty(config, 'password', { value: 'secret', enumerable: false, writable: true });
    const client = new GuardedPgClient(config) as unknown as { password: string; user: string; host: string };
    expect([client.password, client.user, client.host]).toStrictEqual(['secret', 'wallet', '127.0.0.1']);
    expect(keepAliveOf(client as unknown as pg.Client).on).toBe(true);
  });

  it('listens for errors from birth', () => {
    expect(new GuardedPgClient({}).listenerCount('error')).toBe(1);
  });
});
