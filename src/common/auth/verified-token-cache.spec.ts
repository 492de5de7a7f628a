import { loadConfig } from '#config/app-config.js';
import type { Principal } from './principal.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

/** A JWT-shaped token (not signed: the cache is handed tokens that verified) with a claim of `padding` characters. */
function token(sub: string, padding: number): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const exp = Math.floor(Date.now() / 1000) + 3600;
  return `${part({ alg: 'ES256', kid: 'k' })}.${part({ sub, exp, big: 'x'.repeat(padding) })}.signature`;
}

describe('VerifiedTokenCache', () => {
  const config = loadConfig({ NODE_ENV: 'test', AUTH_CACHE_MS: '60000' });
  const principal = (subject: string): Principal => ({ kind: 'subject', appId: 'app', subject });
  const keysOf = (cache: VerifiedTokenCache) => [
    ...(cache as unknown as { entries: Map<string, unknown> }).entries.keys(),
  ];

  it('keeps a digest of each token, not the token: its memory does not grow with the tokens (decision 0073)', () => {
    const cache = new VerifiedTokenCache(config);
    const tokens = Array.from({ length: 50 }, (_, i) => token(`user-${i}`, 15_000));
    tokens.forEach((value, i) => cache.remember(value, principal(`user-${i}`)));
    const keys = keysOf(cache);
    expect(keys).toHaveLength(50);
    for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    tokens.forEach((value, i) => expect(cache.get(value)).toEqual(principal(`user-${i}`)));
  });

  it('tells apart tokens that differ only at the end, and knows no token it was not given', () => {
    const cache = new VerifiedTokenCache(config);
    const a = token('a', 4000);
    cache.remember(a, principal('a'));
    expect(cache.get(`${a.slice(0, -1)}X`)).toBeUndefined();
    expect(cache.get(a)).toEqual(principal('a'));
    cache.clear();
    expect(cache.get(a)).toBeUndefined();
  });
});
