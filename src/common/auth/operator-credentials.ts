import { timingSafeEqual } from 'node:crypto';

/**
 * Whether an Authorization header carries the operator token (METRICS_TOKEN), as `Bearer <token>` or, where
 * `basic` is allowed (the queue dashboard, so a browser can open it), as the password of `Basic`. The scheme is
 * matched in any case and may be followed by several spaces (RFC 7235); the token is everything after them,
 * compared in constant time. Without a configured token, nothing matches.
 */
export function carriesOperatorToken(
  header: string | undefined,
  expected: string | undefined,
  options: { basic?: boolean } = {},
): boolean {
  if (!expected || header === undefined) return false;
  let given: string | undefined;
  const bearer = /^Bearer +/i.exec(header);
  if (bearer) given = header.slice(bearer[0].length);
  else if (options.basic) {
    const basic = /^Basic +/i.exec(header);
    if (basic) {
      const decoded = Buffer.from(header.slice(basic[0].length), 'base64').toString('utf8');
      given = decoded.slice(decoded.indexOf(':') + 1);
    }
  }
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
