import path from 'node:path';
import type { EnvReaders } from '../env-readers.js';

/** Transfers: tax, group commit, this service's name, the counterparty directory, the clearing simulator. */
export interface TransfersConfig {
  /** Tax rate applied to each movement (fraction, e.g. 0.006 for 0.6 %); 0 by default. */
  readonly transferTaxRate: string;
  /**
   * Group commit of POST /wallet/transactions (docs/decisions/0015): at most `max` transfers per database call,
   * at most `concurrency` calls in flight, a call beyond the first only once `extraCallMin` requests wait
   * (decision 0035); requests arriving meanwhile wait for the next call.
   */
  readonly transferBatch: {
    readonly max: number;
    readonly concurrency: number;
    readonly extraCallMin: number;
  };
  /** The name this service shows as `entidadBancaria` of its own accounts. */
  readonly entityName: string;
  /** The simulated directory of other institutions' accounts (JSON). */
  readonly counterpartyDirectoryFile: string;
  readonly clearingSimDelayMs: number;
}

export function loadTransfersConfig({ str, int, problems }: EnvReaders): TransfersConfig {
  const clearingSimDelayMs = int('CLEARING_SIM_DELAY_MS', 1000, 0, 3_600_000);
  const transferTaxRate = str('TRANSFER_TAX_RATE') ?? '0';
  if (!/^(0(\.\d{1,6})?|1(\.0+)?)$/.test(transferTaxRate))
    problems.push(`TRANSFER_TAX_RATE must be a fraction from 0 to 1 (got "${transferTaxRate}")`);
  return {
    transferTaxRate,
    transferBatch: {
      max: int('TRANSFER_BATCH_MAX', 32, 1, 60),
      concurrency: int('TRANSFER_BATCH_CONCURRENCY', 2, 1, 100),
      extraCallMin: int('TRANSFER_BATCH_EXTRA_MIN', 10, 1, 60),
    },
    entityName: str('ENTITY_NAME') ?? 'Wallet Service',
    counterpartyDirectoryFile: path.resolve(
      str('COUNTERPARTY_DIRECTORY_FILE') ?? 'config/counterparty-directory.json',
    ),
    clearingSimDelayMs,
  };
}
