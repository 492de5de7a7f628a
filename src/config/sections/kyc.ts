import type { EnvReaders } from '../env-readers.js';

/** KYC sessions: the simulated provider's pace. */
export interface KycConfig {
  /** How long the KYC simulator takes to complete a submitted step. */
  readonly kycSimDelayMs: number;
}

export function loadKycConfig({ int }: EnvReaders): KycConfig {
  return { kycSimDelayMs: int('KYC_SIM_DELAY_MS', 1000, 0, 3_600_000) };
}
