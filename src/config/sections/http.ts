import type { EnvReaders } from '../env-readers.js';

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
  readonly trustProxy: boolean;
  /** V8's heap growing factor for the API process, in percent over the live heap (0: V8's own). */
  readonly apiHeapGrowthPercent: number;
  /** API processes on this machine (node:cluster, one port); 1: the API is one process (decision 0033). */
  readonly apiProcesses: number;
}

const SIZE = /^(\d+)(b|kb|mb)?$/i;
const UNIT_BYTES: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

export function loadHttpConfig({ str, int, bool, problems }: EnvReaders): HttpConfig {
  const port = int('PORT', 3000, 0, 65535);
  let publicBaseUrl = str('PUBLIC_BASE_URL') ?? `http://localhost:${port}/v1/`;
  let routePrefix = 'v1';
  try {
    const u = new URL(publicBaseUrl);
    if (!['http:', 'https:'].includes(u.protocol) || !u.pathname.endsWith('/v1/')) throw new Error();
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
    apiHeapGrowthPercent: int('API_HEAP_GROWTH_PERCENT', 50, 0, 300),
    apiProcesses: int('API_PROCESSES', 1, 1, 64),
    trustProxy: bool('TRUST_PROXY', false),
  };
}
