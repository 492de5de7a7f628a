import { Injectable } from '@nestjs/common';
import type { SimSwapProvider } from './sim-swap.port.js';

/** Documented test numbers of the SIM swap simulator: hours since their SIM was swapped. */
export const SIM_SWAP_SIMULATOR_NUMBERS: Readonly<Record<string, number>> = {
  /** Swapped an hour ago: swapped for any maximum age. */
  '541100000009': 1,
  /** Swapped 300 hours ago: swapped only with CAMARA_MAX_AGE_HOURS of 300 or more (not with the default 240). */
  '541100000008': 300,
};

/** The default SIM swap provider: only its test numbers report a swap. */
@Injectable()
export class SimSwapSimulator implements SimSwapProvider {
  swappedWithin(phoneNumber: string, maxAgeHours: number): Promise<boolean> {
    const hoursAgo = SIM_SWAP_SIMULATOR_NUMBERS[phoneNumber];
    return Promise.resolve(hoursAgo !== undefined && hoursAgo <= maxAgeHours);
  }
}
