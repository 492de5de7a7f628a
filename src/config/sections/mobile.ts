import type { EnvReaders } from '../env-readers.js';
import type { CoreConfig } from './core.js';

/** SMS and SIM swap providers, rate limits (docs/decisions/0010-messaging.md). */
export interface MobileConfig {
  readonly smsProvider: 'simulator' | 'smpp';
  /** Destination prefixes the provider can reach (empty: all); others answer 400 NO ROUTES. */
  readonly smsRoutePrefixes: readonly string[];
  readonly smsAppLimitPerMinute: number;
  readonly smsAppLimitPerDay: number;
  readonly smsDestinationLimitPerHour: number;
  /** SMS one user (a user token's subject) may send in an hour, within the application's limits. */
  readonly smsUserLimitPerHour: number;
  /** SIM swap checks (each a paid provider request) per application and minute, and per user and hour. */
  readonly simSwapAppLimitPerMinute: number;
  readonly simSwapUserLimitPerHour: number;
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
    /**
     * How receipts write the submit_sm_resp message_id (docs/decisions/0085): `same` (SMPP 3.4, leading zeros
     * tolerated), `hex` (receipts in hex, submit_sm_resp in decimal), `decimal` (the reverse), `auto` (exact first,
     * then the other forms).
     */
    readonly receiptIdForm: 'same' | 'hex' | 'decimal' | 'auto';
    /**
     * The SMSC's clock in receipts' `submit date`/`done date`, which carry no zone: minutes east of UTC
     * (SMPP_RECEIPT_UTC_OFFSET `±hh:mm`, default `+00:00`; `-03:00` for an SMSC on Argentine time; decision 0087).
     */
    readonly receiptUtcOffsetMinutes: number;
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

/** SMS and SIM swap settings: which provider, its connection, and the abuse limits. */
export function loadMobileConfig(
  { str, int, url, choice, problems }: EnvReaders,
  { nodeEnv }: Pick<CoreConfig, 'nodeEnv'>,
): MobileConfig {
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
  const receiptOffset = str('SMPP_RECEIPT_UTC_OFFSET') ?? '+00:00';
  const offsetParts = /^([+-])(0\d|1[0-4]):([0-5]\d)$/.exec(receiptOffset);
  if (!offsetParts)
    problems.push('SMPP_RECEIPT_UTC_OFFSET must be an offset from UTC such as -03:00 or +00:00');
  const receiptUtcOffsetMinutes = offsetParts
    ? (offsetParts[1] === '-' ? -1 : 1) * (Number(offsetParts[2]) * 60 + Number(offsetParts[3])) || 0
    : 0;
  const isCamara = simSwapProvider === 'camara';
  if (isCamara && str('CAMARA_SIM_SWAP_URL') === undefined) {
    problems.push('CAMARA_SIM_SWAP_URL is required when SIM_SWAP_PROVIDER=camara');
  }
  // The check carries the access token and the subscriber's number, and its answer is a fraud signal: in
  // production only TLS, as CAMARA's APIs are served (plain http stays for development and the tests' peer).
  const camaraUrl = url('CAMARA_SIM_SWAP_URL', ['http:', 'https:'], { credentials: false });
  if (nodeEnv === 'production' && camaraUrl !== undefined && new URL(camaraUrl).protocol !== 'https:') {
    problems.push('CAMARA_SIM_SWAP_URL must be an https URL when NODE_ENV=production');
  }
  return {
    smsProvider,
    smsRoutePrefixes,
    smsAppLimitPerMinute: int('SMS_APP_LIMIT_PER_MINUTE', 60, 1, 1_000_000),
    smsAppLimitPerDay: int('SMS_APP_LIMIT_PER_DAY', 5000, 1, 100_000_000),
    smsDestinationLimitPerHour: int('SMS_DESTINATION_LIMIT_PER_HOUR', 10, 1, 1_000_000),
    smsUserLimitPerHour: int('SMS_USER_LIMIT_PER_HOUR', 20, 1, 1_000_000),
    simSwapAppLimitPerMinute: int('SIM_SWAP_APP_LIMIT_PER_MINUTE', 60, 1, 1_000_000),
    simSwapUserLimitPerHour: int('SIM_SWAP_USER_LIMIT_PER_HOUR', 20, 1, 1_000_000),
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
      receiptIdForm: choice('SMPP_RECEIPT_ID_FORM', ['same', 'hex', 'decimal', 'auto'], 'same'),
      receiptUtcOffsetMinutes,
    },
    simSwapProvider,
    camara: {
      baseUrl: (camaraUrl ?? '').replace(/\/+$/, ''),
      accessToken: bearerToken(
        required('CAMARA_ACCESS_TOKEN', isCamara, 'SIM_SWAP_PROVIDER=camara'),
        problems,
      ),
      maxAgeHours: int('CAMARA_MAX_AGE_HOURS', 240, 1, 2400),
      timeoutMs: int('CAMARA_TIMEOUT_MS', 5000, 100, 120_000),
      phoneFormat: choice('CAMARA_PHONE_FORMAT', ['e164', 'ar-mobile-9'], 'e164'),
    },
  };
}

/**
 * A bearer token as RFC 6750 writes one (token68: letters, digits and -._~+/, then any =). Anything else would
 * fail in fetch's header check, whose message quotes the whole header, token included, into the log.
 */
function bearerToken(value: string, problems: string[]): string {
  if (value !== '' && !/^[A-Za-z0-9\-._~+/]+=*$/.test(value)) {
    problems.push('CAMARA_ACCESS_TOKEN must be a bearer token (letters, digits and -._~+/, then any =)');
  }
  return value;
}
