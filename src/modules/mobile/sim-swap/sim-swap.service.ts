import { Inject, Injectable } from '@nestjs/common';
import { ServiceUnavailableError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import type { Principal } from '#common/auth/principal.js';
import { SimSwapLimits } from './sim-swap-limits.js';
import { SIM_SWAP_PROVIDER, SimSwapLookupError, type SimSwapProvider } from './sim-swap.port.js';

/** The `message` of POST /mobile/simSwap (README, "SMS and SIM swap"). */
export function simSwapMessage(swapped: boolean, maxAgeHours: number): string {
  return swapped
    ? `The SIM card of this phone number was swapped within the last ${maxAgeHours} hours.`
    : `The SIM card of this phone number was not swapped within the last ${maxAgeHours} hours.`;
}

/** Checks whether a number's SIM was swapped recently (within CAMARA_MAX_AGE_HOURS). */
@Injectable()
export class SimSwapService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(SIM_SWAP_PROVIDER) private readonly provider: SimSwapProvider,
    private readonly limits: SimSwapLimits,
  ) {}

  /** The check for `principal`, within its limits (SimSwapLimits: each check is a paid provider request). */
  async check(principal: Principal, phoneNumber: string): Promise<{ swapped: boolean; message: string }> {
    await this.limits.take(principal);
    const maxAgeHours = this.config.mobile.camara.maxAgeHours;
    try {
      const swapped = await this.provider.swappedWithin(phoneNumber, maxAgeHours);
      return { swapped, message: simSwapMessage(swapped, maxAgeHours) };
    } catch (error) {
      if (error instanceof SimSwapLookupError && error.kind === 'unsupported-number') {
        throw ValidationFailedError.single(
          'phoneNumber',
          'invalid',
          'the SIM swap provider cannot check this number',
        );
      }
      if (error instanceof SimSwapLookupError) {
        throw new ServiceUnavailableError('The SIM swap provider is not available', {
          checks: { simSwapProvider: 'down' },
        });
      }
      throw error;
    }
  }
}
