import path from 'node:path';
import type { EnvReaders } from '../env-readers.js';
import type { CoreConfig } from './core.js';

/** Tokens: signing keys, token lifetime, clock skew, the token rate limit, the verified-token cache. */
export interface AuthConfig {
  /** Service signing keys (JWK set file). Required in production. */
  readonly signingKeysFile: string;
  readonly signingKeysFileExplicit: boolean;
  /**
   * How long after `keys rotate` the new key starts signing (published at once): the time a verifier that caches
   * the JWKS needs to see it (decision 0006's amendment). A first key signs at once.
   */
  readonly signingKeyActivationSeconds: number;
  readonly accessTokenTtlSeconds: number;
  readonly clockSkewSeconds: number;
  readonly tokenRateLimitPerMinute: number;
  /** How long a bearer token that verified is trusted without checking it again (0: never). */
  readonly authCacheMs: number;
}

export function loadAuthConfig(
  { str, int, problems }: EnvReaders,
  { nodeEnv, dataDir }: Pick<CoreConfig, 'nodeEnv' | 'dataDir'>,
): AuthConfig {
  const signingKeysFileRaw = str('SIGNING_KEYS_FILE');
  if (nodeEnv === 'production' && !signingKeysFileRaw) {
    problems.push('SIGNING_KEYS_FILE is required when NODE_ENV=production');
  }
  return {
    signingKeysFile: path.resolve(signingKeysFileRaw ?? path.join(dataDir, 'keys', 'signing-keys.json')),
    signingKeysFileExplicit: signingKeysFileRaw !== undefined,
    signingKeyActivationSeconds: int('SIGNING_KEY_ACTIVATION_SECONDS', 120, 0, 86_400),
    accessTokenTtlSeconds: int('ACCESS_TOKEN_TTL_SECONDS', 900, 60, 3600),
    clockSkewSeconds: int('CLOCK_SKEW_SECONDS', 60, 0, 300),
    tokenRateLimitPerMinute: int('TOKEN_RATE_LIMIT_PER_MINUTE', 60, 1, 100_000),
    authCacheMs: int('AUTH_CACHE_MS', 1000, 0, 60_000),
  };
}
