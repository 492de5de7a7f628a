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
  /** When the middleware saw it (performance.now()): set on every request it observes, read when its answer ends. */
  observedAt?: number;
  /** Its path without the query as the middleware saw it (routing may rewrite `url` before the answer ends). */
  observedPath?: string;
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
  /**
   * The prototype of the server's answers (Express's `app.response`): the end of each answer is observed there,
   * once for all, instead of by a listener on each (see answersClosed).
   */
  responsePrototype: object;
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
  answersClosed(options.responsePrototype, (response) => {
    const request = response.req as ObservedRequest | undefined;
    const started = request?.observedAt;
    if (started === undefined) return;
    const seconds = (performance.now() - started) / 1000;
    const finished = response.writableFinished;
    const status = response.statusCode;
    const routePath = request!.route?.path;
    metrics.httpDuration.observe(
      {
        method: request!.method ?? '',
        route: routePath === undefined ? 'unmatched' : `${request!.baseUrl ?? ''}${routePath}`,
        status: finished ? String(status) : 'aborted',
      },
      seconds,
    );
    const path = request!.observedPath ?? '';
    if (options.quiet(path)) return;
    const level: Level = !finished || status >= 500 ? 'error' : status >= 400 ? 'info' : 'debug';
    const logger = options.logger();
    if (!logger.isLevelEnabled(level)) return;
    logger[level](
      {
        req: { id: request!.id, method: request!.method, path },
        res: { statusCode: status },
        responseTime: Math.round(seconds * 1000),
      },
      finished ? 'request completed' : 'request aborted',
    );
  });
  return (request: ObservedRequest, response: ServerResponse, next: () => void): void => {
    request.observedAt = performance.now();
    request.id = requestId(request, response);
    const path = request.path ?? (request.url ?? '').split('?')[0];
    request.observedPath = path;
    for (const [name, value] of options.headersFor(path)) {
      if (value === undefined) response.removeHeader(name);
      else response.setHeader(name, value);
    }
    next();
  };
}

/**
 * Calls `onClosed` with each answer of this prototype when it emits `close` (its end: sent whole, or its
 * connection gone), before its own listeners. One wrapper of `emit` on the prototype instead of a `close` listener
 * on every answer: a listener per answer cost the transfer path about a tenth of the API's CPU per transfer
 * (bench/README.md, "A listener on every answer"). Node emits an answer's `close` once.
 */
export function answersClosed(prototype: object, onClosed: (response: ServerResponse) => void): void {
  const target = prototype as { emit: ServerResponse['emit'] };
  const emit = target.emit;
  target.emit = function emitObserved(this: ServerResponse, event: string | symbol, ...args: unknown[]) {
    if (event === 'close') onClosed(this);
    return emit.call(this, event, ...args);
  } as ServerResponse['emit'];
}
