import type { IncomingMessage } from 'node:http';

/**
 * A request's path without its query, as Express routes it: from `originalUrl` (mounted middleware rewrites
 * `url` and `path`), and for a request line in absolute form (`PATCH http://host/v1/users/… HTTP/1.1`, which
 * RFC 9112 §3.2.2 has servers accept) its pathname, as Express's router takes it (decision 0100).
 */
export function requestPath(request: IncomingMessage & { originalUrl?: string }): string {
  const url = request.originalUrl ?? request.url ?? '/';
  if (url.startsWith('/')) return url.split('?')[0];
  try {
    return new URL(url).pathname;
  } catch {
    return url.split('?')[0];
  }
}
