import { PinoLogger } from '../../src/common/logging/pino-logger.js';

/**
 * The arguments of every `level` call of the services' PinoLogger while `during` runs (the lines are still written
 * as before). The logger is put back however `during` ends.
 */
export async function loggedDuring<T>(
  level: 'info' | 'warn' | 'error',
  during: () => Promise<T>,
): Promise<{ result: T; lines: unknown[][] }> {
  const lines: unknown[][] = [];
  const original = Object.getOwnPropertyDescriptor(PinoLogger.prototype, level)!;
  PinoLogger.prototype[level] = function (this: PinoLogger, ...args: Parameters<PinoLogger['warn']>) {
    lines.push(args);
    (original.value as PinoLogger['warn']).apply(this, args);
  };
  try {
    return { result: await during(), lines };
  } finally {
    Object.defineProperty(PinoLogger.prototype, level, original);
  }
}
