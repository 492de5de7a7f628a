// Loaded into a process under test with `node --import`: reports, as a process warning on stderr, every
// query sent to a pg client that is still running (or queueing) another one. pg 8.23 only warns from the
// third query on one client (its DeprecationWarning, once per process); pg 9 drops the client's queue. The
// warning names the call site, once per site. It watches, and changes nothing else.
import pg from 'pg';

export const BUSY_CLIENT_WARNING = 'WALLET_PG_BUSY_CLIENT';

const query = pg.Client.prototype.query;
const reported = new Set();

pg.Client.prototype.query = function guardedQuery(...args) {
  const busy = !this.pipeline && (Boolean(this._activeQuery) || (this._queryQueue?.length ?? 0) > 0);
  if (busy) {
    const stack = (new Error().stack ?? '').split('\n').slice(2, 14).join('\n');
    if (!reported.has(stack)) {
      reported.add(stack);
      const sent = typeof args[0] === 'string' ? args[0] : args[0]?.text;
      const running = this._activeQuery?.text;
      process.emitWarning(
        `query on a busy pg client: ${oneLine(sent)} (while running: ${oneLine(running)})`,
        { code: BUSY_CLIENT_WARNING, detail: stack },
      );
    }
  }
  return query.apply(this, args);
};

function oneLine(text) {
  return String(text).replace(/\s+/g, ' ').slice(0, 100);
}
