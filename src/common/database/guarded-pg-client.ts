import pg from 'pg';

/** Silence on a PostgreSQL connection's socket before TCP keepalive probes start. */
export const PG_KEEPALIVE_DELAY_MS = 10_000;

const SOCKET_KEEPALIVE = { keepAlive: true, keepAliveInitialDelayMillis: PG_KEEPALIVE_DELAY_MS };

/**
 * The pg client of the TypeORM pool, with an 'error' listener from birth.
 *
 * pg-pool hands a new connection over from inside the socket parser (on ReadyForQuery) and removes its own
 * idle 'error' listener; TypeORM attaches its listener a microtask later. When the server terminates the
 * backend right then (failover, restart, `pg_terminate_backend`), the FATAL message arrives in the same chunk
 * and is emitted with no listener: EventEmitter throws from the socket handler and the whole process dies.
 * With this listener it stays an ordinary connection error: the client is no longer queryable, the query on
 * it fails (one 5xx), and the pool drops the client when it is released.
 *
 * And with TCP keepalive on (unless the config says otherwise): a database host that vanishes mid-query without
 * a reset (a crash, a cut network) is noticed by the kernel's probes after {@link PG_KEEPALIVE_DELAY_MS} of
 * silence, and the query fails, where it waited forever (a transfer group holding its accounts' batcher slot, a
 * webhook claim its lease).
 */
export class GuardedPgClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(withKeepAlive(typeof config === 'string' ? { connectionString: config } : (config ?? {})));
    this.on('error', () => undefined);
  }
}

/**
 * The config with keepalive on unless it says otherwise, every property kept as it is: pg-pool makes `password`
 * non-enumerable (so it stays out of logs), and a spread would drop it.
 */
function withKeepAlive(config: pg.ClientConfig): pg.ClientConfig {
  const merged: pg.ClientConfig = { ...SOCKET_KEEPALIVE };
  Object.defineProperties(merged, Object.getOwnPropertyDescriptors(config));
  return merged;
}
