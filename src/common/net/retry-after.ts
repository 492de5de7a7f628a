/**
 * A peer's `Retry-After` (RFC 9110 §10.2.3) in milliseconds from now: delay-seconds, or an HTTP date (a date
 * already past is 0). Undefined when absent or neither form.
 */
export function parseRetryAfter(value: string | undefined): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
