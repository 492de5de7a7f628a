import { ConfigError, loadConfig } from '#config/app-config.js';

const problemsOf = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('loadConfig accepted the environment');
};

describe('SMS and SIM swap settings', () => {
  it('default to the simulators, documented limits and CAMARA maxAge 240', () => {
    const { mobile } = loadConfig({});
    expect(mobile).toMatchObject({
      smsProvider: 'simulator',
      simSwapProvider: 'simulator',
      smsRoutePrefixes: [],
      smsAppLimitPerMinute: 60,
      smsAppLimitPerDay: 5000,
      smsDestinationLimitPerHour: 10,
      smsSimDeliveryDelayMs: 2000,
      smpp: {
        port: 2775,
        bindMode: 'transceiver',
        enquireLinkMs: 30_000,
        reconnectMinMs: 1000,
        reconnectMaxMs: 60_000,
      },
      camara: { maxAgeHours: 240, timeoutMs: 5000, phoneFormat: 'e164' },
    });
  });

  it('needs host, system id and password for SMPP, and URL and token for CAMARA', () => {
    const message = problemsOf({ SMS_PROVIDER: 'smpp', SIM_SWAP_PROVIDER: 'camara' });
    for (const name of [
      'SMPP_HOST',
      'SMPP_SYSTEM_ID',
      'SMPP_PASSWORD',
      'CAMARA_SIM_SWAP_URL',
      'CAMARA_ACCESS_TOKEN',
    ]) {
      expect(message).toContain(`${name} is required`);
    }
  });

  it('reads a complete SMPP and CAMARA configuration', () => {
    const { mobile } = loadConfig({
      SMS_PROVIDER: 'smpp',
      SMPP_HOST: 'smsc.example',
      SMPP_PORT: '3000',
      SMPP_SYSTEM_ID: 'wallet',
      SMPP_PASSWORD: 'pw',
      SMPP_BIND_MODE: 'transmitter-receiver',
      SMS_ROUTE_PREFIXES: '5411, 5435',
      SIM_SWAP_PROVIDER: 'camara',
      CAMARA_SIM_SWAP_URL: 'https://operator.example/sim-swap/v1/',
      CAMARA_ACCESS_TOKEN: 't',
      CAMARA_MAX_AGE_HOURS: '2400',
      CAMARA_PHONE_FORMAT: 'ar-mobile-9',
    });
    expect(mobile.smpp).toMatchObject({ host: 'smsc.example', port: 3000, bindMode: 'transmitter-receiver' });
    expect(mobile.smsRoutePrefixes).toEqual(['5411', '5435']);
    expect(mobile.camara).toMatchObject({
      baseUrl: 'https://operator.example/sim-swap/v1',
      maxAgeHours: 2400,
      phoneFormat: 'ar-mobile-9',
    });
  });

  it('refuses bad values, naming each', () => {
    const message = problemsOf({
      SMS_PROVIDER: 'twilio',
      SMPP_BIND_MODE: 'receiver',
      SMS_ROUTE_PREFIXES: '54a',
      CAMARA_MAX_AGE_HOURS: '2401',
      CAMARA_SIM_SWAP_URL: 'ftp://x',
      SMPP_RECONNECT_MIN_MS: '5000',
      SMPP_RECONNECT_MAX_MS: '1000',
      SMS_APP_LIMIT_PER_MINUTE: '0',
    });
    for (const name of [
      'SMS_PROVIDER',
      'SMPP_BIND_MODE',
      'SMS_ROUTE_PREFIXES',
      'CAMARA_MAX_AGE_HOURS',
      'CAMARA_SIM_SWAP_URL',
      'SMPP_RECONNECT_MAX_MS',
      'SMS_APP_LIMIT_PER_MINUTE',
    ]) {
      expect(message).toContain(name);
    }
  });

  it('refuses a CAMARA URL with credentials and a token that is not a bearer token, echoing neither', () => {
    const message = problemsOf({
      SIM_SWAP_PROVIDER: 'camara',
      CAMARA_SIM_SWAP_URL: 'https://user:s3cret-pass@operator.example/sim-swap/v1',
      CAMARA_ACCESS_TOKEN: 'abc\ndef-secret',
      DOCUMENT_STORAGE: 's3',
      S3_BUCKET: 'docs',
      S3_ENDPOINT: 'https://key:s3-secret@minio.example',
    });
    expect(message).toContain('CAMARA_SIM_SWAP_URL must not carry a user or password');
    expect(message).toContain('CAMARA_ACCESS_TOKEN must be a bearer token');
    expect(message).toContain('S3_ENDPOINT must not carry a user or password');
    for (const secret of ['s3cret-pass', 'def-secret', 's3-secret']) expect(message).not.toContain(secret);
    expect(
      loadConfig({
        SIM_SWAP_PROVIDER: 'camara',
        CAMARA_SIM_SWAP_URL: 'https://operator.example/sim-swap/v1',
        CAMARA_ACCESS_TOKEN: 'eyJhbGciOiJFUzI1NiJ9.e30.c2ln-_~+/==',
      }).mobile.camara.accessToken,
    ).toBe('eyJhbGciOiJFUzI1NiJ9.e30.c2ln-_~+/==');
  });

  it('takes only an https CAMARA URL when NODE_ENV=production (the check carries the token and the number)', () => {
    const camara = { SIM_SWAP_PROVIDER: 'camara', CAMARA_ACCESS_TOKEN: 't' };
    const production = { NODE_ENV: 'production', SIGNING_KEYS_FILE: '/keys.json', ...camara };
    expect(
      problemsOf({ ...production, CAMARA_SIM_SWAP_URL: 'http://operator.example/sim-swap/v1' }),
    ).toContain('CAMARA_SIM_SWAP_URL must be an https URL when NODE_ENV=production');
    expect(
      loadConfig({ ...production, CAMARA_SIM_SWAP_URL: 'https://operator.example/sim-swap/v1' }).mobile.camara
        .baseUrl,
    ).toBe('https://operator.example/sim-swap/v1');
    for (const NODE_ENV of ['development', 'test']) {
      expect(
        loadConfig({ NODE_ENV, ...camara, CAMARA_SIM_SWAP_URL: 'http://127.0.0.1:8080/sim-swap/v1' }).mobile
          .camara.baseUrl,
      ).toBe('http://127.0.0.1:8080/sim-swap/v1');
    }
  });
});
