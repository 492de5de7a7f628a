import { Inject, Injectable } from '@nestjs/common';
import type { Options, Store } from 'express-rate-limit';
import type { Principal } from '#common/auth/principal.js';
import { TooManyRequestsError } from '#common/errors/domain-errors.js';
import { SharedRateLimitStores } from '#common/http/shared-rate-limit-store.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';

/**
 * Each SIM swap check is a paid request to the operator: SIM_SWAP_APP_LIMIT_PER_MINUTE per application and, for
 * a user token, SIM_SWAP_USER_LIMIT_PER_HOUR per user (so one user cannot use up the application's checks),
 * counted across every API process in the shared rate-limit store (Redis or PostgreSQL, as the token endpoint's
 * limit; per process while Redis does not answer). Taken by the route once its body is valid, the user's count
 * first: a user past its own limit never reaches the application's. A refusal is the route's 400 `NO ROUTES` with
 * Retry-After: the seconds until the window that refused it ends (decision 0054).
 */
@Injectable()
export class SimSwapLimits {
  private readonly perApplication: Store;
  private readonly perUser: Store;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    stores: SharedRateLimitStores,
  ) {
    this.perApplication = stores.store('simswap-app');
    this.perUser = stores.store('simswap-user');
    void this.perApplication.init?.({ windowMs: 60_000 } as Options);
    void this.perUser.init?.({ windowMs: 3_600_000 } as Options);
  }

  async take(principal: Principal): Promise<void> {
    const limits = this.config.mobile;
    if (principal.kind === 'subject') {
      await this.count(
        this.perUser,
        `${principal.appId}:${principal.subject}`,
        limits.simSwapUserLimitPerHour,
        'user per hour',
      );
    }
    await this.count(
      this.perApplication,
      principal.appId,
      limits.simSwapAppLimitPerMinute,
      'application per minute',
    );
  }

  private async count(store: Store, key: string, limit: number, name: string): Promise<void> {
    const { totalHits, resetTime } = await store.increment(key);
    if (totalHits <= limit) return;
    const seconds = resetTime ? Math.ceil((resetTime.getTime() - Date.now()) / 1000) : 60;
    throw new TooManyRequestsError(`SIM swap rate limit exceeded (${name})`, Math.max(1, seconds));
  }
}
