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
  /** Longest SQL statement on the service's connections (0: no limit); PostgreSQL cancels longer ones. */
  readonly dbStatementTimeoutMs: number;
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
  /** Slowloris protection: time a client has to send the headers, and the whole request (408 after). */
  readonly httpHeadersTimeoutMs: number;
  readonly httpRequestTimeoutMs: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly metricsToken: string | undefined;
  readonly webhookAllowPrivateUrls: boolean;
  readonly webhookRetryDelaysMs: readonly number[];
  /** Timeout of one delivery attempt. */
  readonly webhookTimeoutMs: number;
  /** How often the worker looks for events the queue lost (Redis flushed, relay down). */
  readonly webhookSweepIntervalMs: number;
  readonly clearingSimDelayMs: number;
  /** Currency of new wallet accounts (ISO 4217). */
  readonly accountCurrency: string;
  /** The PSP code in issued CVUs (4 digits): CVU = 000 + PSP + check, 0 + 12-digit client number + check. */
  readonly cvuPspCode: string;
  /** Calendar of the operated amounts (month and year to date). */
  readonly operationsTimeZone: string;
  /** Where document bytes are kept: local disk under DATA_DIR, or an S3-compatible bucket. */
  readonly documentStorage:
    | { kind: 'local' }
    | {
        kind: 's3';
        bucket: string;
        region: string;
        endpoint: string | undefined;
        accessKeyId: string | undefined;
        secretAccessKey: string | undefined;
        forcePathStyle: boolean;
        keyPrefix: string;
      };
  /** Tax rate applied to each movement (fraction, e.g. 0.006 for 0.6 %); 0 by default. */
  readonly transferTaxRate: string;
  /**
   * Group commit of POST /wallet/transactions (docs/decisions/0015): at most `max` transfers per database call,
   * at most `concurrency` calls in flight; requests arriving meanwhile wait for the next call.
   */
  readonly transferBatch: { readonly max: number; readonly concurrency: number };
  /** The name this service shows as `entidadBancaria` of its own accounts. */
  readonly entityName: string;
  /** The simulated directory of other institutions' accounts (JSON). */
  readonly counterpartyDirectoryFile: string;
  /** Largest document upload accepted. */
  readonly documentMaxBytes: number;
  /** How long the KYC simulator takes to complete a submitted step. */
  readonly kycSimDelayMs: number;
  readonly tokenRateLimitPerMinute: number;
  /** V8's heap growing factor for the API process, in percent over the live heap (0: V8's own). */
  readonly apiHeapGrowthPercent: number;
  /** How long a bearer token that verified is trusted without checking it again (0: never). */
  readonly authCacheMs: number;
  readonly trustProxy: boolean;
  /** SMS and SIM swap providers, rate limits (docs/decisions/0010-messaging.md). */
  readonly mobile: MobileConfig;
}

export interface MobileConfig {
  readonly smsProvider: 'simulator' | 'smpp';
  /** Destination prefixes the provider can reach (empty: all); others answer 400 NO ROUTES. */
  readonly smsRoutePrefixes: readonly string[];
  readonly smsAppLimitPerMinute: number;
  readonly smsAppLimitPerDay: number;
  readonly smsDestinationLimitPerHour: number;
  /** How long the simulator takes to report a delivery receipt. */
  readonly smsSimDeliveryDelayMs: number;
  readonly smpp: {
    readonly host: string;
    readonly port: number;
    readonly systemId: string;
    readonly password: string;
    readonly systemType: string;
    readonly bindMode: 'transceiver' | 'transmitter-receiver';
    /** Source address of submitted messages (digits: international number; else alphanumeric). */
    readonly sourceAddr: string;
    readonly enquireLinkMs: number;
    readonly responseTimeoutMs: number;
    readonly reconnectMinMs: number;
    readonly reconnectMaxMs: number;
  };
  readonly simSwapProvider: 'simulator' | 'camara';
  readonly camara: {
    /** Base URL of the CAMARA SIM Swap API, e.g. https://operator.example/sim-swap/v1 (POST {base}/check). */
    readonly baseUrl: string;
    readonly accessToken: string;
    readonly maxAgeHours: number;
    readonly timeoutMs: number;
    /** `e164`: +<12 digits>; `ar-mobile-9`: +54 9 <10 digits> (Argentine mobiles, DOMAIN.md C6). */
    readonly phoneFormat: 'e164' | 'ar-mobile-9';
  };
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

/** DB_STATEMENT_TIMEOUT_MS unset (also what connections opened without a config get). */
export const DEFAULT_DB_STATEMENT_TIMEOUT_MS = 15_000;

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

  const httpHeadersTimeoutMs = int('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const httpRequestTimeoutMs = int('HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs)
    problems.push('HTTP_HEADERS_TIMEOUT_MS must not be larger than HTTP_REQUEST_TIMEOUT_MS');

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
    dbStatementTimeoutMs: int('DB_STATEMENT_TIMEOUT_MS', DEFAULT_DB_STATEMENT_TIMEOUT_MS, 0, 3_600_000),
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
    httpHeadersTimeoutMs,
    httpRequestTimeoutMs,
    logLevel: logLevelRaw as AppConfig['logLevel'],
    metricsToken: str('METRICS_TOKEN'),
    webhookAllowPrivateUrls: bool('WEBHOOK_ALLOW_PRIVATE_URLS', false),
    webhookRetryDelaysMs: webhookRetryDelaysMs.filter((d): d is number => d !== undefined),
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    webhookSweepIntervalMs: int('WEBHOOK_SWEEP_INTERVAL_MS', 5_000, 50, 600_000),
    clearingSimDelayMs: int('CLEARING_SIM_DELAY_MS', 1000, 0, 3_600_000),
    accountCurrency: (() => {
      const currency = str('ACCOUNT_CURRENCY') ?? 'ARS';
      if (
        !['ARS', 'USD', 'EUR', 'BRL', 'UYU', 'CLP', 'PYG', 'BOB', 'PEN', 'MXN', 'COP', 'GBP', 'JPY'].includes(
          currency,
        )
      ) {
        problems.push(`ACCOUNT_CURRENCY must be a supported ISO 4217 code such as ARS (got "${currency}")`);
      }
      return currency;
    })(),
    cvuPspCode: (() => {
      const code = str('CVU_PSP_CODE') ?? '0031';
      if (!/^\d{4}$/.test(code)) problems.push(`CVU_PSP_CODE must be 4 digits (got "${code}")`);
      return code;
    })(),
    operationsTimeZone: (() => {
      const zone = str('OPERATIONS_TIME_ZONE') ?? 'America/Argentina/Buenos_Aires';
      try {
        new Intl.DateTimeFormat('en', { timeZone: zone });
      } catch {
        problems.push(`OPERATIONS_TIME_ZONE must be an IANA time zone (got "${zone}")`);
      }
      return zone;
    })(),
    documentStorage: (() => {
      const kind = str('DOCUMENT_STORAGE') ?? 'local';
      if (kind === 'local') return { kind: 'local' as const };
      if (kind !== 's3') {
        problems.push(`DOCUMENT_STORAGE must be local or s3 (got "${kind}")`);
        return { kind: 'local' as const };
      }
      const bucket = str('S3_BUCKET');
      if (!bucket) problems.push('S3_BUCKET is required when DOCUMENT_STORAGE=s3');
      const accessKeyId = str('S3_ACCESS_KEY_ID');
      const secretAccessKey = str('S3_SECRET_ACCESS_KEY');
      if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
        problems.push('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together');
      }
      const endpoint = url('S3_ENDPOINT', ['http:', 'https:']);
      return {
        kind: 's3' as const,
        bucket: bucket ?? '',
        region: str('S3_REGION') ?? 'us-east-1',
        endpoint,
        accessKeyId,
        secretAccessKey,
        forcePathStyle: bool('S3_FORCE_PATH_STYLE', endpoint !== undefined),
        keyPrefix: (str('S3_KEY_PREFIX') ?? '').replace(/^\/+|\/+$/g, ''),
      };
    })(),
    transferTaxRate: (() => {
      const rate = str('TRANSFER_TAX_RATE') ?? '0';
      if (!/^(0(\.\d{1,6})?|1(\.0+)?)$/.test(rate))
        problems.push(`TRANSFER_TAX_RATE must be a fraction from 0 to 1 (got "${rate}")`);
      return rate;
    })(),
    transferBatch: {
      max: int('TRANSFER_BATCH_MAX', 32, 1, 60),
      concurrency: int('TRANSFER_BATCH_CONCURRENCY', 1, 1, 100),
    },
    entityName: str('ENTITY_NAME') ?? 'Wallet Service',
    counterpartyDirectoryFile: path.resolve(
      str('COUNTERPARTY_DIRECTORY_FILE') ?? 'config/counterparty-directory.json',
    ),
    documentMaxBytes: int('DOCUMENT_MAX_BYTES', 10 * 1024 * 1024, 1024, 100 * 1024 * 1024),
    kycSimDelayMs: int('KYC_SIM_DELAY_MS', 1000, 0, 3_600_000),
    tokenRateLimitPerMinute: int('TOKEN_RATE_LIMIT_PER_MINUTE', 60, 1, 100_000),
    apiHeapGrowthPercent: int('API_HEAP_GROWTH_PERCENT', 50, 0, 300),
    authCacheMs: int('AUTH_CACHE_MS', 1000, 0, 60_000),
    trustProxy: bool('TRUST_PROXY', false),
    mobile: loadMobileConfig({ str, int, url, problems }),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

interface EnvReaders {
  str: (name: string) => string | undefined;
  int: (name: string, def: number, min: number, max: number) => number;
  url: (name: string, protocols: string[]) => string | undefined;
  problems: string[];
}

/** SMS and SIM swap settings: which provider, its connection, and the abuse limits. */
function loadMobileConfig({ str, int, url, problems }: EnvReaders): MobileConfig {
  const choice = <T extends string>(name: string, allowed: readonly T[], def: T): T => {
    const raw = str(name) ?? def;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    problems.push(`${name} must be one of ${allowed.join(', ')} (got "${raw}")`);
    return def;
  };
  const smsProvider = choice('SMS_PROVIDER', ['simulator', 'smpp'], 'simulator');
  const simSwapProvider = choice('SIM_SWAP_PROVIDER', ['simulator', 'camara'], 'simulator');
  const required = (name: string, when: boolean, because: string): string => {
    const value = str(name);
    if (when && value === undefined) problems.push(`${name} is required when ${because}`);
    return value ?? '';
  };
  const prefixes = (str('SMS_ROUTE_PREFIXES') ?? '').split(',').map((part) => part.trim());
  const smsRoutePrefixes = prefixes.filter(Boolean);
  if (smsRoutePrefixes.some((prefix) => !/^[0-9]{1,12}$/.test(prefix))) {
    problems.push('SMS_ROUTE_PREFIXES must be a comma-separated list of digit prefixes such as 5411,5435');
  }
  const reconnectMinMs = int('SMPP_RECONNECT_MIN_MS', 1000, 10, 600_000);
  const reconnectMaxMs = int('SMPP_RECONNECT_MAX_MS', 60_000, 10, 3_600_000);
  if (reconnectMaxMs < reconnectMinMs) {
    problems.push('SMPP_RECONNECT_MAX_MS must not be smaller than SMPP_RECONNECT_MIN_MS');
  }
  const sourceAddr = str('SMPP_SOURCE_ADDR') ?? '';
  if (sourceAddr.length > 20) problems.push('SMPP_SOURCE_ADDR must be at most 20 characters');
  const isSmpp = smsProvider === 'smpp';
  const isCamara = simSwapProvider === 'camara';
  if (isCamara && str('CAMARA_SIM_SWAP_URL') === undefined) {
    problems.push('CAMARA_SIM_SWAP_URL is required when SIM_SWAP_PROVIDER=camara');
  }
  return {
    smsProvider,
    smsRoutePrefixes,
    smsAppLimitPerMinute: int('SMS_APP_LIMIT_PER_MINUTE', 60, 1, 1_000_000),
    smsAppLimitPerDay: int('SMS_APP_LIMIT_PER_DAY', 5000, 1, 100_000_000),
    smsDestinationLimitPerHour: int('SMS_DESTINATION_LIMIT_PER_HOUR', 10, 1, 1_000_000),
    smsSimDeliveryDelayMs: int('SMS_SIM_DELIVERY_DELAY_MS', 2000, 0, 3_600_000),
    smpp: {
      host: required('SMPP_HOST', isSmpp, 'SMS_PROVIDER=smpp'),
      port: int('SMPP_PORT', 2775, 1, 65535),
      systemId: required('SMPP_SYSTEM_ID', isSmpp, 'SMS_PROVIDER=smpp'),
      password: required('SMPP_PASSWORD', isSmpp, 'SMS_PROVIDER=smpp'),
      systemType: str('SMPP_SYSTEM_TYPE') ?? '',
      bindMode: choice('SMPP_BIND_MODE', ['transceiver', 'transmitter-receiver'], 'transceiver'),
      sourceAddr,
      enquireLinkMs: int('SMPP_ENQUIRE_LINK_MS', 30_000, 100, 3_600_000),
      responseTimeoutMs: int('SMPP_RESPONSE_TIMEOUT_MS', 10_000, 100, 600_000),
      reconnectMinMs,
      reconnectMaxMs,
    },
    simSwapProvider,
    camara: {
      baseUrl: (url('CAMARA_SIM_SWAP_URL', ['http:', 'https:']) ?? '').replace(/\/+$/, ''),
      accessToken: required('CAMARA_ACCESS_TOKEN', isCamara, 'SIM_SWAP_PROVIDER=camara'),
      maxAgeHours: int('CAMARA_MAX_AGE_HOURS', 240, 1, 2400),
      timeoutMs: int('CAMARA_TIMEOUT_MS', 5000, 100, 120_000),
      phoneFormat: choice('CAMARA_PHONE_FORMAT', ['e164', 'ar-mobile-9'], 'e164'),
    },
  };
}
