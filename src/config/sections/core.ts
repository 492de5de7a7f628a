import path from 'node:path';
import type { EnvReaders } from '../env-readers.js';

/** The process itself: its environment, data directory, log level and the operator's metrics token. */
export interface CoreConfig {
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly dataDir: string;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly metricsToken: string | undefined;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadCoreConfig({ str, problems }: EnvReaders): CoreConfig {
  const nodeEnvRaw = str('NODE_ENV') ?? 'development';
  const nodeEnv = (['development', 'production', 'test'].includes(nodeEnvRaw) ? nodeEnvRaw : 'invalid') as
    CoreConfig['nodeEnv'] | 'invalid';
  if (nodeEnv === 'invalid') problems.push(`NODE_ENV must be development, production or test`);

  const logLevelRaw = str('LOG_LEVEL') ?? (nodeEnv === 'test' ? 'silent' : 'info');
  if (!LOG_LEVELS.includes(logLevelRaw)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);

  return {
    nodeEnv: nodeEnv === 'invalid' ? 'development' : nodeEnv,
    dataDir: path.resolve(str('DATA_DIR') ?? './data'),
    logLevel: logLevelRaw as CoreConfig['logLevel'],
    metricsToken: str('METRICS_TOKEN'),
  };
}
