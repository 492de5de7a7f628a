import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Level, Logger } from 'pino';
import { requestId } from '../logging/logging.js';
import type { MetricsRegistry } from '../metrics/metrics.registry.js';

type ExpressLikeMiddleware = (request: never, response: never, next: (error?: unknown) => void) => void;

/** A header list to apply as it is: [name, value] to set, [name, undefined] to remove. */
export type StaticHeaders = readonly (readonly [string, string | undefined])[];

/**
 * What a header-only middleware (helmet) does to every response, recorded once. Helmet's headers do not
 * depend on the request unless a directive is a function (a CSP nonce), which this service never uses;
 * replaying the recording costs a few setHeader calls instead of a dozen middleware hops per request.
 * Throws if the middleware did anything but set or remove headers and call next at once.
 */
export function recordHeaders(middleware: ExpressLikeMiddleware): StaticHeaders {
  const recorded: [string, string | undefined][] = [];
  let nextCalled = false;
  const response = {
    setHeader(name: string, value: unknown) {
      recorded.push([name, Array.isArray(value) ? value.join(', ') : String(value)]);
      return response;
    },
    removeHeader(name: string) {
      recorded.push([name, undefined]);
    },
  };
  const request = { method: 'GET', url: '/', headers: {}, secure: false };
  middleware(request as never, response as never, (error?: unknown) => {
    if (error) throw error instanceof Error ? error : new Error(String(error));
    nextCalled = true;
  });
  if (!nextCalled) throw new Error('the header middleware did not call next() synchronously');
  return recorded;
}

type ObservedRequest = IncomingMessage & {
  /** The request id, read by the error filter as a 500 body's trackingId. */
  id?: string;
  path?: string;
  baseUrl?: string;
  route?: { path?: string };
};

export interface HttpObservabilityOptions {
  /** The root logger, read per line (the logging module sets it while the application starts). */
  logger: () => Logger;
  metrics: MetricsRegistry;
  /** The security headers of a request, by its path (the docs page has a looser CSP). */
  headersFor: (path: string) => StaticHeaders;
  /** Paths whose requests are not access-logged (health probes). */
  quiet: (path: string) => boolean;
}

/**
 * The one per-request middleware in front of everything: the request id (echoed as X-Request-Id and used as
 * the error body's trackingId), the security headers, and, when the response ends, the duration histogram
 * (by route pattern, never the raw path) and the access log line. Successful requests log at debug, 4xx at
 * info, 5xx and aborted requests at error, as pino-http did, but nothing is serialised unless the line will
 * be written, and no per-request child logger or async context is created (see decision 0016).
 */
export function httpObservability(options: HttpObservabilityOptions) {
  const { metrics } = options;
  return (request: ObservedRequest, response: ServerResponse, next: () => void): void => {
    const started = performance.now();
    const id = requestId(request, response);
    request.id = id;
    const path = request.path ?? (request.url ?? '').split('?')[0];
    for (const [name, value] of options.headersFor(path)) {
      if (value === undefined) response.removeHeader(name);
      else response.setHeader(name, value);
    }
    response.once('close', () => {
      const seconds = (performance.now() - started) / 1000;
      const finished = response.writableFinished;
      const status = response.statusCode;
      const routePath = request.route?.path;
      metrics.httpDuration.observe(
        {
          method: request.method ?? '',
          route: routePath === undefined ? 'unmatched' : `${request.baseUrl ?? ''}${routePath}`,
          status: finished ? String(status) : 'aborted',
        },
        seconds,
      );
      if (options.quiet(path)) return;
      const level: Level = !finished || status >= 500 ? 'error' : status >= 400 ? 'info' : 'debug';
      const logger = options.logger();
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          req: { id, method: request.method, path },
          res: { statusCode: status },
          responseTime: Math.round(seconds * 1000),
        },
        finished ? 'request completed' : 'request aborted',
      );
    });
    next();
  };
}
