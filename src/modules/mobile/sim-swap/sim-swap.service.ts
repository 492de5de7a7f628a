import { Inject, Injectable } from '@nestjs/common';
import { ServiceUnavailableError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import type { Principal } from '#common/auth/principal.js';
import { camaraPhoneNumber } from './phone-number.js';
import { SimSwapLimits } from './sim-swap-limits.js';
import { SIM_SWAP_PROVIDER, SimSwapLookupError, type SimSwapProvider } from './sim-swap.port.js';

/** The `message` of POST /mobile/simSwap (README, "SMS and SIM swap"). */
export function simSwapMessage(swapped: boolean, maxAgeHours: number): string {
  return swapped
    ? `The SIM card of this phone number was swapped within the last ${maxAgeHours} hours.`
    : `The SIM card of this phone number was not swapped within the last ${maxAgeHours} hours.`;
}

/**
 * The Retry-After of the 503 when the provider fails: 1 s, as every 503 of a dependency out of reach (decision
 * 0004), or the provider's own, at most 60 s. A 503 asks the caller to try again shortly; a provider that asks for
 * longer answers the next check with its new Retry-After (decision 0078).
 */
export const SIM_SWAP_RETRY_AFTER = { default: 1, max: 60 } as const;

/** Checks whether a number's SIM was swapped recently (within CAMARA_MAX_AGE_HOURS). */
@Injectable()
export class SimSwapService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(SIM_SWAP_PROVIDER) private readonly provider: SimSwapProvider,
    private readonly limits: SimSwapLimits,
  ) {}

  /**
   * The check for `principal`, within its limits (SimSwapLimits: each check is a paid provider request). A check
   * the provider certainly did not make gives its units back (decision 0080); the answer is the same. A number
   * whose E.164 form is not CAMARA's (a leading 0) is refused before any unit is taken, and never sent (decision
   * 0086): the same 400 as a number the provider cannot check. The simulator stands for CAMARA, so it too.
   */
  async check(principal: Principal, phoneNumber: string): Promise<{ swapped: boolean; message: string }> {
    const { maxAgeHours, phoneFormat } = this.config.mobile.camara;
    if (camaraPhoneNumber(phoneNumber, phoneFormat) === undefined) throw cannotCheck();
    const taken = await this.limits.take(principal);
    try {
      const swapped = await this.provider.swappedWithin(phoneNumber, maxAgeHours);
      return { swapped, message: simSwapMessage(swapped, maxAgeHours) };
    } catch (error) {
      if (error instanceof SimSwapLookupError && error.performed === 'no') await this.limits.giveBack(taken);
      if (error instanceof SimSwapLookupError && error.kind === 'unsupported-number') throw cannotCheck();
      if (error instanceof SimSwapLookupError) {
        const asked = error.retryAfterSeconds ?? SIM_SWAP_RETRY_AFTER.default;
        throw new ServiceUnavailableError(
          'The SIM swap provider is not available',
          { checks: { simSwapProvider: 'down' } },
          Math.min(SIM_SWAP_RETRY_AFTER.max, Math.max(1, asked)),
        );
      }
      throw error;
    }
  }
}

/** A number the provider cannot check: the route's 400 `NO ROUTES`, as an SMS without a route. */
function cannotCheck(): ValidationFailedError {
  return ValidationFailedError.single(
    'phoneNumber',
    'invalid',
    'the SIM swap provider cannot check this number',
  );
}
