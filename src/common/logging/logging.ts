import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Params } from 'nestjs-pino';
import pino from 'pino';
import type { AppConfig } from '../../config/app-config.js';

const INCOMING_ID = /^[A-Za-z0-9._-]{8,64}$/;

/**
 * Fields never written to logs: credentials and anything that may carry
 * personal data. Bodies are never logged at all.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  '*.password',
  '*.token',
  '*.accessToken',
  '*.privateJwk',
];

/** A request id per request: the caller's X-Request-Id when well-formed, else a new uuid; echoed back. */
export function requestId(request: IncomingMessage, response: ServerResponse): string {
  const incoming = request.headers['x-request-id'];
  const id = typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : randomUUID();
  response.setHeader('X-Request-Id', id);
  return id;
}

export function pinoParams(config: AppConfig, base: Record<string, string>): Params {
  const options = {
    level: config.logLevel,
    base,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // pino-http would give the root logger its request/response serializers, made for raw Node objects:
    // the access line's plain `res: {statusCode}` came out as `statusCode: null` (no `headersSent` on it) and
    // `req.path` as `req.url`. The access line is built by httpObservability already (decision 0016); only
    // errors get a serializer.
    wrapSerializers: false,
    serializers: { err: pino.stdSerializers.err },
  } satisfies NonNullable<Params['pinoHttp']>;
  // The CLI keeps stdout for its JSON answers: its logs go to stderr.
  return {
    pinoHttp: base.role === 'cli' ? [options, pino.destination(2)] : options,
    // nestjs-pino's per-request middleware (pino-http's child logger and an AsyncLocalStorage context per
    // request) is not mounted: the request id and the access log come from httpObservability (decision 0016).
    forRoutes: [],
  };
}
