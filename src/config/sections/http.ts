import { isIP } from 'node:net';
import type { EnvReaders } from '../env-readers.js';

/**
 * Express's `trust proxy` as TRUST_PROXY gives it: false (the peer's address), the number of proxies in front
 * (1: the address the one load balancer appended, X-Forwarded-For's right-most entry), or the addresses and
 * CIDRs of the trusted proxies. Never `true`, which takes the left-most entry, written by the caller.
 */
export type TrustProxy = false | number | readonly string[];

/** The HTTP API: where it listens, its public base URL, request limits, proxies, its heap and its processes. */
export interface HttpConfig {
  readonly port: number;
  /** {base_url}: absolute, ends with `/v1/`. */
  readonly publicBaseUrl: string;
  /** Path prefix of every route, derived from publicBaseUrl (normally `v1`). */
  readonly routePrefix: string;
  readonly bodyLimitBytes: number;
  /** Slowloris protection: time a client has to send the headers, and the whole request (408 after). */
  readonly httpHeadersTimeoutMs: number;
  readonly httpRequestTimeoutMs: number;
  /**
   * How long an idle keep-alive connection stays open after a response: above the idle timeout of a load
   * balancer in front (60 s for most), so the balancer, not the service, closes it (Node's 5 s made a balancer
   * send a request on a connection being closed: a 502).
   */
  readonly httpKeepAliveTimeoutMs: number;
  /**
   * Open connections one API process keeps at most (capConnections in configure-app.ts); a connection past it is
   * closed as soon as it is accepted. Below the process's file descriptor limit, so that the database pool, the queue and
   * files always get a descriptor (decision 0073).
   */
  readonly maxConnections: number;
  readonly trustProxy: TrustProxy;
  /** V8's heap growing factor for the API process, in percent over the live heap (0: V8's own). */
  readonly apiHeapGrowthPercent: number;
  /** API processes on this machine (node:cluster, one port); 1: the API is one process (decision 0033). */
  readonly apiProcesses: number;
}

const SIZE = /^(\d+)(b|kb|mb)?$/i;
const UNIT_BYTES: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

/** proxy-addr's names for address ranges (loopback, link-local, unique-local, IPv4 and IPv6 each). */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const MAX_HOPS = 10;

/** An address, a CIDR (never a /0: every address) or a range name; false for anything else. */
function isTrustedProxyEntry(entry: string): boolean {
  if (RANGE_NAMES.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d+$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= (family === 4 ? 32 : 128);
}

function readTrustProxy(raw: string | undefined, problems: string[]): TrustProxy {
  if (raw === undefined || /^(false|no|0)$/i.test(raw)) return false;
  if (/^(true|yes)$/i.test(raw)) {
    problems.push(
      `TRUST_PROXY=${raw} would take the client address from the left-most X-Forwarded-For entry, which any ` +
        `caller writes; give the hop count of the proxies in front (1 for one load balancer) or their addresses ` +
        `(e.g. loopback,10.0.0.0/8)`,
    );
    return false;
  }
  if (/^\d+$/.test(raw)) {
    if (Number(raw) <= MAX_HOPS) return Number(raw);
    problems.push(
      `TRUST_PROXY must be false, a hop count from 1 to ${MAX_HOPS}, or proxy addresses (got "${raw}")`,
    );
    return false;
  }
  const entries = raw.split(',').map((entry) => entry.trim());
  const bad = entries.filter((entry) => !isTrustedProxyEntry(entry));
  if (bad.length === 0) return Object.freeze(entries);
  problems.push(
    `TRUST_PROXY must be false, a hop count, or a comma-separated list of proxy addresses, CIDRs (not /0) and ` +
      `loopback, linklocal, uniquelocal (got "${raw}")`,
  );
  return false;
}

export function loadHttpConfig({ str, int, problems }: EnvReaders): HttpConfig {
  const port = int('PORT', 3000, 0, 65535);
  let publicBaseUrl = str('PUBLIC_BASE_URL') ?? `http://localhost:${port}/v1/`;
  let routePrefix = 'v1';
  try {
    const u = new URL(publicBaseUrl);
    // {base_url} is what every endpoint's URL and the token audiences are built from by appending a path: a query,
    // a fragment or credentials in it would end up inside them (`…/v1/?a=boauth/token`; decision 0093).
    if (!['http:', 'https:'].includes(u.protocol) || !u.pathname.endsWith('/v1/')) throw new Error();
    // `?` and `#` are looked for in the text: a bare one leaves `search` and `hash` empty but stays in the URL.
    if (/[?#]/.test(publicBaseUrl) || u.username !== '' || u.password !== '') throw new Error();
    publicBaseUrl = u.toString();
    routePrefix = u.pathname.replace(/^\/+|\/+$/g, '');
  } catch {
    problems.push(`PUBLIC_BASE_URL must be an http(s) URL ending with /v1/ (got "${publicBaseUrl}")`);
  }

  const bodyLimitRaw = str('BODY_LIMIT') ?? '100kb';
  const sizeMatch = SIZE.exec(bodyLimitRaw);
  const bodyLimitBytes = sizeMatch
    ? Number(sizeMatch[1]) * UNIT_BYTES[(sizeMatch[2] ?? 'b').toLowerCase()]
    : 0;
  if (!sizeMatch || bodyLimitBytes < 1024)
    problems.push(`BODY_LIMIT must be a size of at least 1kb such as 100kb`);

  const httpHeadersTimeoutMs = int('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const httpRequestTimeoutMs = int('HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs)
    problems.push('HTTP_HEADERS_TIMEOUT_MS must not be larger than HTTP_REQUEST_TIMEOUT_MS');

  return {
    port,
    publicBaseUrl,
    routePrefix,
    bodyLimitBytes,
    httpHeadersTimeoutMs,
    httpRequestTimeoutMs,
    httpKeepAliveTimeoutMs: int('HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000, 1_000, 3_600_000),
    maxConnections: int('MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    apiHeapGrowthPercent: int('API_HEAP_GROWTH_PERCENT', 50, 0, 300),
    apiProcesses: int('API_PROCESSES', 1, 1, 64),
    trustProxy: readTrustProxy(str('TRUST_PROXY'), problems),
  };
}
