import pg from 'pg';

/**
 * The pg client of the TypeORM pool, with an 'error' listener from birth.
 *
 * pg-pool hands a new connection over from inside the socket parser (on ReadyForQuery) and removes its own
 * idle 'error' listener; TypeORM attaches its listener a microtask later. When the server terminates the
 * backend right then (failover, restart, `pg_terminate_backend`), the FATAL message arrives in the same chunk
 * and is emitted with no listener: EventEmitter throws from the socket handler and the whole process dies.
 * With this listener it stays an ordinary connection error: the client is no longer queryable, the query on
 * it fails (one 5xx), and the pool drops the client when it is released.
 */
export class GuardedPgClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}
