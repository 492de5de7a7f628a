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
    genReqId: requestId,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // Query strings can carry identifiers; log the path only.
    serializers: {
      req: (req: { id: string; method: string; url: string }) => ({
        id: req.id,
        method: req.method,
        path: String(req.url ?? '').split('?')[0],
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    customLogLevel: (_req: IncomingMessage, res: ServerResponse, error?: Error) =>
      error || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug',
    autoLogging: { ignore: (req: IncomingMessage) => (req.url ?? '').includes('/health/') },
  } satisfies NonNullable<Params['pinoHttp']>;
  // The CLI keeps stdout for its JSON answers: its logs go to stderr.
  return { pinoHttp: base.role === 'cli' ? [options, pino.destination(2)] : options };
}
