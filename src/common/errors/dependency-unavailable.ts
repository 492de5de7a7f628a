/**
 * Whether an error says a service the request needs (the database above all, or a document store) could not be
 * reached or dropped the connection, as opposed to a request or statement that failed: a refused, reset or timed
 * out socket, an unknown host; PostgreSQL's connection-exception class (08), an administrator or crash shutdown
 * (57P01-57P03), too many connections (53300), or the pg driver's own words for a connection it lost. Looked up
 * through TypeORM's `driverError` and `cause` links.
 */
export function isDependencyUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  const { code, message, driverError, cause } = error as {
    code?: unknown;
    message?: unknown;
    driverError?: unknown;
    cause?: unknown;
  };
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || code.startsWith('08') || SERVER_CODES.has(code)))
    return true;
  if (typeof message === 'string' && DRIVER_MESSAGES.some((pattern) => pattern.test(message))) return true;
  return isDependencyUnavailable(driverError, depth + 1) || isDependencyUnavailable(cause, depth + 1);
}

const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections. */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);

/** pg and pg-pool, for connections they lost or could not get (no code attached). */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /^Client has encountered a connection error and is not queryable/,
  /^timeout exceeded when trying to connect/,
];
