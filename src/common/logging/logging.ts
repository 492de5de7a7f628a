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

/**
 * The only error fields written to logs: what says what failed and where, never what was in it. An allow-list,
 * not a list of fields to drop (decision 0054 dropped PostgreSQL's `detail`, which quotes row values: `Key
 * (email)=(…)`): libraries hang more on their errors than anyone reviews. The AWS SDK copies the whole XML error
 * body onto its exception (`AWSAccessKeyId`, `StringToSign`, `CanonicalRequest` with a session token's header);
 * PostgreSQL's `where` quotes JSON input; body-parser's `body` is the request's; an invalid URL's `input` is the
 * URL (credentials and all).
 */
const LOGGED_ERROR_FIELDS = new Set([
  'type',
  'message',
  'stack',
  'code',
  'errno',
  'syscall',
  'severity',
  'routine',
  'constraint',
  'table',
  'column',
  'schema',
  'status',
  'statusCode',
  '$fault',
  'Code',
  'RequestId',
]);

/**
 * An error as a log field (pino's `err`): what pino's own serializer writes (type, message, stack, and the
 * error's own enumerable fields; the causes' messages and stacks folded into its own), keeping only the fields
 * of LOGGED_ERROR_FIELDS whose values are strings, numbers or booleans (an AggregateError's errors the same
 * way). Objects that
 * libraries hang on errors never reach the log: a pg client (its connection parameters, backend process id
 * and cancel key), a socket, an HTTP request with its headers.
 */
export function errorField(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  return scalarFields(pino.stdSerializers.err(error) as unknown as Record<string, unknown>, true);
}

function scalarFields(serialized: Record<string, unknown>, top: boolean): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(serialized)) {
    if (
      LOGGED_ERROR_FIELDS.has(name) &&
      (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    ) {
      kept[name] = value;
    } else if (name === 'aggregateErrors' && Array.isArray(value) && top) {
      kept[name] = value
        .slice(0, 10)
        .map((one: unknown) =>
          one && typeof one === 'object' ? scalarFields(one as Record<string, unknown>, false) : one,
        );
    }
  }
  return kept;
}

/** The serializers of every logger of the service. */
export const LOG_SERIALIZERS = { err: errorField };

/** A request id per request: the caller's X-Request-Id when well-formed, else a new uuid; echoed back. */
export function requestId(request: IncomingMessage, response: ServerResponse): string {
  const incoming = request.headers['x-request-id'];
  const id = typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : randomUUID();
  response.setHeader('X-Request-Id', id);
  return id;
}

/**
 * The process's root logger: JSON lines at `LOG_LEVEL`, credentials redacted, errors under `err` (errorField).
 * No request or response serializers: the access line writes the fields it means (decision 0016).
 * The CLI keeps stdout for its JSON answers, so its logs go to stderr.
 */
export function rootLogger(config: AppConfig, base: Record<string, string | number>): Logger {
  return pino(
    {
      level: config.logLevel,
      base,
      serializers: LOG_SERIALIZERS,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    base.role === 'cli' ? pino.destination(2) : pino.destination(1),
  );
}
