import type pg from 'pg';

/**
 * The server process behind a pooled connection, as PostgreSQL names it: its pid and its start (backend_start, in
 * seconds since the epoch as exact decimal text, to the microsecond). A pid alone is not enough: once the server
 * restarts, another session's backend may get the same pid; pid and start together name one backend only.
 */
export interface Backend {
  pid: number;
  started: string;
}

const backends = new WeakMap<pg.ClientBase, Backend>();

/** How long a new connection's one statement may take before the connection fails. */
const RECORD_BACKEND_TIMEOUT_MS = 5_000;

/**
 * The pool's `onConnect` hook (the DataSource's pool, src/data-source.ts): reads the new connection's backend once,
 * one statement per connection, before the pool hands the connection out. Nothing is kept when the server's pid is
 * not the one the client was given at start-up (a pooler in between, whose sessions move between backends): such a
 * connection's backend cannot be named, so a call lost on it is not looked into (decision 0066).
 */
export async function recordBackend(client: pg.ClientBase): Promise<void> {
  // Bounded: pg-pool's connectionTimeoutMillis stops before this hook, and a connection whose first answer never
  // comes (a link stalled after the handshake, a pooler queueing it) would hold the caller and a pool slot.
  const { rows } = await client.query<Backend>({
    text: `SELECT pid, extract(epoch FROM backend_start)::text AS started FROM pg_stat_get_activity(pg_backend_pid())`,
    query_timeout: RECORD_BACKEND_TIMEOUT_MS,
  } as pg.QueryConfig);
  const [backend] = rows;
  if (backend && backend.pid === (client as { processID?: unknown }).processID) backends.set(client, backend);
}

/** The backend recorded for a pooled connection when it connected, if any. */
export function backendOf(client: pg.ClientBase): Backend | undefined {
  return backends.get(client);
}

/**
 * Ends `backend` (`pg_terminate_backend`), if it is still there, from another connection (`client`), and waits
 * until it is gone: whatever it was running is rolled back, unless it had committed already. Only the backend
 * with both that pid and that start is ended; one whose pid was reused is left alone. True once it is gone (ended
 * now, or no longer there), false while it is still there after `timeoutMs`. A role may end its own backends
 * without further privileges (PostgreSQL's rule: the caller has the privileges of the backend's role).
 */
export async function endBackend(
  client: pg.ClientBase,
  backend: Backend,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = Math.max(1, deadline - Date.now());
    const { rows } = await client.query<{ ended: boolean }>({
      text: `SELECT pg_terminate_backend(a.pid, $3) AS ended
               FROM pg_stat_get_activity($1) a
              WHERE extract(epoch FROM a.backend_start) = $2::numeric`,
      values: [backend.pid, backend.started, left],
      query_timeout: left + 1_000,
    } as pg.QueryConfig);
    if (rows.length === 0 || rows[0].ended) return true;
    // Still there: the wait ran out, or it was leaving as the signal came (pg_terminate_backend says false when
    // the process is already gone); asked again until the deadline.
    if (Date.now() >= deadline) return false;
  }
}
