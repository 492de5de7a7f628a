import { Inject, Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { createRateLimiter } from '#common/http/rate-limit.js';
import { SharedRateLimitStores } from '#common/http/shared-rate-limit-store.js';

/**
 * TOKEN_RATE_LIMIT_PER_MINUTE token requests per client address and minute, counted across every API
 * process of the deployment (Redis with REDIS_URL, else PostgreSQL; decision 0033).
 */
@Injectable()
export class TokenRateLimitMiddleware implements NestMiddleware {
  private readonly limit: ReturnType<typeof createRateLimiter>;

  constructor(@Inject(APP_CONFIG) config: AppConfig, stores: SharedRateLimitStores) {
    this.limit = createRateLimiter({
      windowMs: 60_000,
      limit: config.tokenRateLimitPerMinute,
      store: stores.store('token'),
    });
  }

  async use(request: Request, response: Response, next: NextFunction): Promise<void> {
    await this.limit(request, response);
    next();
  }
}
