import { Inject, Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { createRateLimiter } from '#common/http/rate-limit.js';

/** TOKEN_RATE_LIMIT_PER_MINUTE token requests per client address and minute. */
@Injectable()
export class TokenRateLimitMiddleware implements NestMiddleware {
  private readonly limit: ReturnType<typeof createRateLimiter>;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.limit = createRateLimiter({ windowMs: 60_000, limit: config.tokenRateLimitPerMinute });
  }

  async use(request: Request, response: Response, next: NextFunction): Promise<void> {
    await this.limit(request, response);
    next();
  }
}
