import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pino, { type Logger } from 'pino';
import type { AppConfig } from '#config/app-config.js';

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

/**
 * The process's root logger: JSON lines at `LOG_LEVEL`, credentials redacted, errors under `err` (pino's own
 * serializer). No request or response serializers: the access line writes the fields it means (decision 0016).
 * The CLI keeps stdout for its JSON answers, so its logs go to stderr.
 */
export function rootLogger(config: AppConfig, base: Record<string, string | number>): Logger {
  return pino(
    { level: config.logLevel, base, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } },
    base.role === 'cli' ? pino.destination(2) : pino.destination(1),
  );
}
