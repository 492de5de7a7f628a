import type { NextFunction, Request, Response } from 'express';
import { rateLimit, type Options, type RateLimitRequestHandler } from 'express-rate-limit';
import { TooManyRequestsError } from '../errors/domain-errors.js';

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
    ...options,
    handler: (_request, _response, next, used) =>
      next(new TooManyRequestsError('Too many requests', Math.ceil(used.windowMs / 1000))),
  });
  return (request: Request, response: Response): Promise<void> =>
    new Promise((resolve, reject) =>
      limiter(request, response, ((error?: unknown) => (error ? reject(error) : resolve())) as NextFunction),
    );
}
