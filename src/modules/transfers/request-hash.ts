import { createHash } from 'node:crypto';
import type { Principal } from '#common/auth/principal.js';

/** JSON with sorted keys, so the same request always hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The hash an Idempotency-Key's use is stored with: the request, and for a user token the user it speaks for.
 * Keys are the application's (decision 0052); a stored answer is given only to the request that made it, so
 * another user of the application who sends the same key and body is refused as "another request", never shown
 * the first user's transfer. An application token's hash is the request's alone, as before.
 */
export function requestHash(principal: Principal, request: unknown): string {
  return hashOf(principal.kind === 'subject' ? { subject: principal.subject, request } : request);
}

/** SHA-256 (hex) of a value's canonical JSON: the hash a stored idempotency claim is compared by. */
export function hashOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}
