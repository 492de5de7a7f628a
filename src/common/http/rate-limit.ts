import type { NextFunction, Request, Response } from 'express';
import { rateLimit, type Options, type RateLimitRequestHandler } from 'express-rate-limit';
import { TooManyRequestsError } from '../errors/domain-errors.js';
import { PinoLogger } from '../logging/pino-logger.js';

/**
 * express-rate-limit's own checks (a `trust proxy` of true, an X-Forwarded-For that is not trusted, …) as one
 * JSON log line each, not a multi-line text with a stack on stderr. TRUST_PROXY=true is refused at start (the
 * left-most X-Forwarded-For entry is the caller's), so the permissive-proxy check has nothing left to report;
 * the checks stay on for what the configuration cannot rule out.
 */
const validationMessage = (error: unknown) =>
  `express-rate-limit: ${error instanceof Error ? error.message : String(error)}`;
const validationLogger = {
  warn: (error: unknown, message?: string) =>
    PinoLogger.root.warn({ err: error }, message ?? validationMessage(error)),
  error: (error: unknown, message?: string) =>
    PinoLogger.root.error({ err: error }, message ?? validationMessage(error)),
};

/**
 * An express-rate-limit limiter whose refusals are thrown as domain errors, so
 * the one exception filter writes them in the route's error style. Counters
 * live in `options.store` (SharedRateLimitStores: Redis or PostgreSQL, counted across processes); without
 * one, per process (express-rate-limit's memory store).
 */
export function createRateLimiter(options: Partial<Options> & { windowMs: number; limit: number }) {
  const limiter: RateLimitRequestHandler = rateLimit({
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    logger: validationLogger,
    ...options,
    handler: (_request, _response, next, used) =>
      next(new TooManyRequestsError('Too many requests', Math.ceil(used.windowMs / 1000))),
  });
  return (request: Request, response: Response): Promise<void> =>
    new Promise((resolve, reject) =>
      limiter(request, response, ((error?: unknown) => (error ? reject(error) : resolve())) as NextFunction),
    );
}
