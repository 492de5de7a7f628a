import { envReaders, type Env } from './env-readers.js';
import { loadAuthConfig, type AuthConfig } from './sections/auth.js';
import { loadCoreConfig, type CoreConfig } from './sections/core.js';
import { loadDatabaseConfig, type DatabaseConfig } from './sections/database.js';
import { loadDocumentsConfig, type DocumentsConfig } from './sections/documents.js';
import { loadHttpConfig, type HttpConfig } from './sections/http.js';
import { loadKycConfig, type KycConfig } from './sections/kyc.js';
import { loadMobileConfig, type MobileConfig } from './sections/mobile.js';
import { loadQueueConfig, type QueueConfig } from './sections/queue.js';
import { loadTransfersConfig, type TransfersConfig } from './sections/transfers.js';
import { loadWalletConfig, type WalletConfig } from './sections/wallet.js';
import { loadWebhooksConfig, type WebhooksConfig } from './sections/webhooks.js';

export { parseDuration } from './env-readers.js';
export { DEFAULT_DB_STATEMENT_TIMEOUT_MS } from './sections/database.js';
export type { MobileConfig } from './sections/mobile.js';

/**
 * The whole configuration, one typed object injected under APP_CONFIG: each section (src/config/sections/) reads
 * and checks its own variables, and loadConfig is the one place that hands them process.env, once, at start-up.
 */
export interface AppConfig
  extends
    CoreConfig,
    HttpConfig,
    DatabaseConfig,
    QueueConfig,
    AuthConfig,
    WebhooksConfig,
    WalletConfig,
    TransfersConfig,
    DocumentsConfig,
    KycConfig {
  /** SMS and SIM swap providers, rate limits (docs/decisions/0010-messaging.md). */
  readonly mobile: MobileConfig;
}

export const APP_CONFIG = Symbol('APP_CONFIG');

export class ConfigError extends Error {
  constructor(problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** Reads and validates the environment; throws ConfigError naming every bad setting. */
export function loadConfig(env: Env = process.env): AppConfig {
  const problems: string[] = [];
  const readers = envReaders(env, problems);
  const core = loadCoreConfig(readers);
  const config: AppConfig = {
    ...core,
    ...loadHttpConfig(readers),
    ...loadDatabaseConfig(readers),
    ...loadQueueConfig(readers),
    ...loadAuthConfig(readers, core),
    ...loadWebhooksConfig(readers),
    ...loadWalletConfig(readers),
    ...loadTransfersConfig(readers),
    ...loadDocumentsConfig(readers),
    ...loadKycConfig(readers),
    mobile: loadMobileConfig(readers, core),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
