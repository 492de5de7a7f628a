import path from 'node:path';

/**
 * The one place that reads process.env. Everything else receives an AppConfig
 * (injected under APP_CONFIG) so settings are validated once, at start-up.
 */
export interface AppConfig {
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly port: number;
  /** {base_url}: absolute, ends with `/v1/`. */
  readonly publicBaseUrl: string;
  /** Path prefix of every route, derived from publicBaseUrl (normally `v1`). */
  readonly routePrefix: string;
  /** Unset: the embedded PostgreSQL under dataDir. */
  readonly databaseUrl: string | undefined;
  readonly databasePoolSize: number;
  /** Unset: BullMQ on its PostgreSQL backend. */
  readonly redisUrl: string | undefined;
  /** Key prefix of every queue (several deployments or test runs can share one Redis). */
  readonly queuePrefix: string;
  readonly dataDir: string;
  /** Service signing keys (JWK set file). Required in production. */
  readonly signingKeysFile: string;
  readonly signingKeysFileExplicit: boolean;
  readonly accessTokenTtlSeconds: number;
  readonly clockSkewSeconds: number;
  readonly bodyLimitBytes: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly metricsToken: string | undefined;
  readonly webhookAllowPrivateUrls: boolean;
  readonly webhookRetryDelaysMs: readonly number[];
  /** Timeout of one delivery attempt. */
  readonly webhookTimeoutMs: number;
  /** How often the worker looks for events the queue lost (Redis flushed, relay down). */
  readonly webhookSweepIntervalMs: number;
  readonly clearingSimDelayMs: number;
  readonly tokenRateLimitPerMinute: number;
  readonly trustProxy: boolean;
}

export const APP_CONFIG = Symbol('APP_CONFIG');

export class ConfigError extends Error {
  constructor(problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

const DURATION = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(text: string): number | undefined {
  const m = DURATION.exec(text.trim());
  return m ? Number(m[1]) * UNIT_MS[m[2]] : undefined;
}

const SIZE = /^(\d+)(b|kb|mb)?$/i;
const UNIT_BYTES: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

type Env = Record<string, string | undefined>;

/** Reads and validates the environment; throws ConfigError naming every bad setting. */
export function loadConfig(env: Env = process.env): AppConfig {
  const problems: string[] = [];
  const str = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === undefined) return def;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return def;
    }
    return Number(raw);
  };
  const bool = (name: string, def: boolean): boolean => {
    const raw = str(name);
    if (raw === undefined) return def;
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return def;
  };
  const url = (name: string, protocols: string[]): string | undefined => {
    const raw = str(name);
    if (raw === undefined) return undefined;
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) throw new Error();
      return raw;
    } catch {
      problems.push(`${name} must be a ${protocols.join(' or ')} URL`);
      return undefined;
    }
  };

  const nodeEnvRaw = str('NODE_ENV') ?? 'development';
  const nodeEnv = (['development', 'production', 'test'].includes(nodeEnvRaw) ? nodeEnvRaw : 'invalid') as
    AppConfig['nodeEnv'] | 'invalid';
  if (nodeEnv === 'invalid') problems.push(`NODE_ENV must be development, production or test`);

  const port = int('PORT', 3000, 0, 65535);
  let publicBaseUrl = str('PUBLIC_BASE_URL') ?? `http://localhost:${port}/v1/`;
  let routePrefix = 'v1';
  try {
    const u = new URL(publicBaseUrl);
    if (!['http:', 'https:'].includes(u.protocol) || !u.pathname.endsWith('/v1/')) throw new Error();
    publicBaseUrl = u.toString();
    routePrefix = u.pathname.replace(/^\/+|\/+$/g, '');
  } catch {
    problems.push(`PUBLIC_BASE_URL must be an http(s) URL ending with /v1/ (got "${publicBaseUrl}")`);
  }

  const dataDir = path.resolve(str('DATA_DIR') ?? './data');
  const signingKeysFileRaw = str('SIGNING_KEYS_FILE');
  if (nodeEnv === 'production' && !signingKeysFileRaw) {
    problems.push('SIGNING_KEYS_FILE is required when NODE_ENV=production');
  }

  const delaysRaw = str('WEBHOOK_RETRY_DELAYS') ?? '5s,5m,30m,2h,5h,10h,14h,20h,24h';
  const webhookRetryDelaysMs = delaysRaw.split(',').map((part) => parseDuration(part));
  if (webhookRetryDelaysMs.some((d) => d === undefined) || webhookRetryDelaysMs.length === 0) {
    problems.push(
      `WEBHOOK_RETRY_DELAYS must be a comma-separated list such as 5s,5m,2h (got "${delaysRaw}")`,
    );
  }

  const bodyLimitRaw = str('BODY_LIMIT') ?? '100kb';
  const sizeMatch = SIZE.exec(bodyLimitRaw);
  const bodyLimitBytes = sizeMatch
    ? Number(sizeMatch[1]) * UNIT_BYTES[(sizeMatch[2] ?? 'b').toLowerCase()]
    : 0;
  if (!sizeMatch || bodyLimitBytes < 1024)
    problems.push(`BODY_LIMIT must be a size of at least 1kb such as 100kb`);

  const logLevelRaw = str('LOG_LEVEL') ?? (nodeEnv === 'test' ? 'silent' : 'info');
  const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  if (!logLevels.includes(logLevelRaw)) problems.push(`LOG_LEVEL must be one of ${logLevels.join(', ')}`);

  const config: AppConfig = {
    nodeEnv: nodeEnv === 'invalid' ? 'development' : nodeEnv,
    port,
    publicBaseUrl,
    routePrefix,
    databaseUrl: url('DATABASE_URL', ['postgres:', 'postgresql:']),
    databasePoolSize: int('DATABASE_POOL_SIZE', 10, 1, 500),
    redisUrl: url('REDIS_URL', ['redis:', 'rediss:']),
    queuePrefix: (() => {
      const prefix = str('QUEUE_PREFIX') ?? 'wallet';
      if (!/^[A-Za-z0-9_-]{1,40}$/.test(prefix))
        problems.push('QUEUE_PREFIX must be 1-40 of A-Z a-z 0-9 _ -');
      return prefix;
    })(),
    dataDir,
    signingKeysFile: path.resolve(signingKeysFileRaw ?? path.join(dataDir, 'keys', 'signing-keys.json')),
    signingKeysFileExplicit: signingKeysFileRaw !== undefined,
    accessTokenTtlSeconds: int('ACCESS_TOKEN_TTL_SECONDS', 900, 60, 3600),
    clockSkewSeconds: int('CLOCK_SKEW_SECONDS', 60, 0, 300),
    bodyLimitBytes,
    logLevel: logLevelRaw as AppConfig['logLevel'],
    metricsToken: str('METRICS_TOKEN'),
    webhookAllowPrivateUrls: bool('WEBHOOK_ALLOW_PRIVATE_URLS', false),
    webhookRetryDelaysMs: webhookRetryDelaysMs.filter((d): d is number => d !== undefined),
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    webhookSweepIntervalMs: int('WEBHOOK_SWEEP_INTERVAL_MS', 5_000, 50, 600_000),
    clearingSimDelayMs: int('CLEARING_SIM_DELAY_MS', 1000, 0, 3_600_000),
    tokenRateLimitPerMinute: int('TOKEN_RATE_LIMIT_PER_MINUTE', 60, 1, 100_000),
    trustProxy: bool('TRUST_PROXY', false),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
