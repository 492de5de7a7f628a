import { Inject, Injectable } from '@nestjs/common';
import type { Options } from 'express-rate-limit';
import type { Principal } from '#common/auth/principal.js';
import { TooManyRequestsError } from '#common/errors/domain-errors.js';
import { SharedRateLimitStores, type WindowedStore } from '#common/http/shared-rate-limit-store.js';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';

/** One counter a check takes a unit of. */
interface Limit {
  readonly store: WindowedStore;
  readonly key: string;
  readonly limit: number;
  readonly name: string;
}

/** A unit taken, and the window it was taken in (the store's, to give it back to). */
interface Taken {
  readonly limit: Limit;
  readonly window: string;
}

/** The units one check took: given back (SimSwapLimits.giveBack) when the provider certainly did not make it. */
export type TakenUnits = readonly Taken[];

/**
 * Each SIM swap check is a paid request to the operator: SIM_SWAP_APP_LIMIT_PER_MINUTE per application and, for
 * a user token, SIM_SWAP_USER_LIMIT_PER_HOUR per user (so one user cannot use up the application's checks),
 * counted across every API process in the shared rate-limit store (Redis or PostgreSQL, as the token endpoint's
 * limit; per process while Redis does not answer). Taken by the route once its body is valid and its number is
 * one CAMARA takes (decision 0086), the user's count first: a user past its own limit never reaches the
 * application's. A refusal is the route's 400 `NO ROUTES` with Retry-After: the seconds until the window that
 * refused it ends (decision 0054).
 *
 * A refused request gives back every unit it took (decision 0058): the user's when the application's limit
 * refuses it, and the refusing limit's own, so each count is the checks it let through. A unit is taken before it
 * is judged (the stores' atomic increment), so a concurrent request may be refused while a refused one still holds
 * its unit; none ever gets through past a limit.
 *
 * A check the provider certainly did not make gives back its units too (decision 0080): the provider out of reach
 * (connection refused, its name not resolved) or refusing the request before any check (503, 429, our token or
 * request refused: `SimSwapLookupError.performed` is `no`). So clients that retry through an outage still have
 * their checks once it ends. A check the provider may have made and billed keeps them: a timeout or a reset once
 * the request was sent, a 500/502/504, an answer we could not read, and an answer about the number (400 `NO
 * ROUTES`: the provider looked it up, and the limit also bounds how many numbers a caller can probe).
 */
@Injectable()
export class SimSwapLimits {
  private readonly perApplication: WindowedStore;
  private readonly perUser: WindowedStore;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    stores: SharedRateLimitStores,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('SimSwapLimits');
    this.perApplication = stores.store('simswap-app');
    this.perUser = stores.store('simswap-user');
    void this.perApplication.init?.({ windowMs: 60_000 } as Options);
    void this.perUser.init?.({ windowMs: 3_600_000 } as Options);
  }

  /** Takes a unit of each limit of `principal`; answers them, to give back should the provider not check. */
  async take(principal: Principal): Promise<TakenUnits> {
    const limits = this.config.mobile;
    const counted: Limit[] = [];
    if (principal.kind === 'subject') {
      counted.push({
        store: this.perUser,
        key: `${principal.appId}:${principal.subject}`,
        limit: limits.simSwapUserLimitPerHour,
        name: 'user per hour',
      });
    }
    counted.push({
      store: this.perApplication,
      key: principal.appId,
      limit: limits.simSwapAppLimitPerMinute,
      name: 'application per minute',
    });
    const taken: Taken[] = [];
    try {
      for (const limit of counted) {
        const { totalHits, resetTime, window } = await limit.store.take(limit.key);
        taken.push({ limit, window });
        if (totalHits > limit.limit) {
          const seconds = resetTime ? Math.ceil((resetTime.getTime() - Date.now()) / 1000) : 60;
          throw new TooManyRequestsError(
            `SIM swap rate limit exceeded (${limit.name})`,
            Math.max(1, seconds),
          );
        }
      }
    } catch (error) {
      await this.giveBack(taken);
      throw error;
    }
    return taken;
  }

  /**
   * Gives back the units of a refused request, or of a check the provider certainly did not make, each to the
   * window it was taken in and only while that window lasts, as the store judges it in the one statement that
   * decrements (decision 0094): a unit given to the next window would let one check more through there. A
   * give-back that fails leaves the unit counted until its window ends, as before decision 0058; the refusal
   * stands.
   */
  async giveBack(taken: TakenUnits): Promise<void> {
    await Promise.all(
      taken.map(async ({ limit, window }) => {
        try {
          await limit.store.giveBack(limit.key, window);
        } catch (error) {
          this.logger.warn(
            { limit: limit.name, err: error },
            'SIM swap limit: a unit could not be given back',
          );
        }
      }),
    );
  }
}
