import { Writable } from 'node:stream';
import pino from 'pino';
import { LOG_SERIALIZERS } from '../../src/common/logging/logging.js';
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

/** Log lines of one logger, parsed (pino's JSON lines, errors through the service's serializers). */
export function capturedLogger(): { logger: PinoLogger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { logger: new PinoLogger(pino({ level: 'debug', serializers: LOG_SERIALIZERS }, stream)), lines };
}
