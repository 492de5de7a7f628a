import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import type { Principal } from '#common/auth/principal.js';
import { createRateLimiter } from '#common/http/rate-limit.js';
import { SharedRateLimitStores } from '#common/http/shared-rate-limit-store.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';

const principalOf = (request: Request): Principal => (request as Request & { user: Principal }).user;

/**
 * Each SIM swap check is a paid request to the operator: SIM_SWAP_APP_LIMIT_PER_MINUTE per application and, for
 * a user token, SIM_SWAP_USER_LIMIT_PER_HOUR per user (so one user cannot use up the application's checks),
 * counted across every API process (Redis or PostgreSQL, as the token endpoint's limit). Runs after the guard,
 * which has named the caller; a refusal is the route's 400 `NO ROUTES` with Retry-After (decision 0054).
 */
@Injectable()
export class SimSwapRateLimitInterceptor implements NestInterceptor {
  private readonly perApplication: ReturnType<typeof createRateLimiter>;
  private readonly perUser: ReturnType<typeof createRateLimiter>;

  constructor(@Inject(APP_CONFIG) config: AppConfig, stores: SharedRateLimitStores) {
    this.perApplication = createRateLimiter({
      windowMs: 60_000,
      limit: config.mobile.simSwapAppLimitPerMinute,
      store: stores.store('simswap-app'),
      keyGenerator: (request) => principalOf(request).appId,
    });
    this.perUser = createRateLimiter({
      windowMs: 3_600_000,
      limit: config.mobile.simSwapUserLimitPerHour,
      store: stores.store('simswap-user'),
      keyGenerator: (request) => {
        const principal = principalOf(request);
        return `${principal.appId}:${principal.kind === 'subject' ? principal.subject : ''}`;
      },
      skip: (request) => principalOf(request).kind !== 'subject',
    });
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = context.switchToHttp();
    const [request, response] = [http.getRequest<Request>(), http.getResponse<Response>()];
    // The user's count first: a user past its own limit never reaches the application's count, so it cannot use up
    // the application's checks by insisting (a request the application's limit refuses still costs the user one).
    await this.perUser(request, response);
    await this.perApplication(request, response);
    return next.handle();
  }
}
