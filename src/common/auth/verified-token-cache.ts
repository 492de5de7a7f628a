import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { decodeJwt } from 'jose';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import type { Principal } from './principal.js';

const MAX_ENTRIES = 10_000;

/**
 * Bearer tokens that verified in the last AUTH_CACHE_MS (1 s by default), with their principal: a repeated
 * token skips the ES256 check and the database lookups of its application and key (docs/decisions/0015).
 * An entry lives until the sooner of its token's `exp` and AUTH_CACHE_MS, so a disabled application, a
 * revoked key or a retired signing key is refused within AUTH_CACHE_MS; changes made in this process (key
 * revoked, signing keys reloaded) clear the cache at once. Only tokens that verified are kept; bounded in size.
 * An entry is keyed by the token's SHA-256, not the token: a user token's claims are the application's to size (a
 * 15 KB token held about 19.5 KB, 195 MB at the cap), and a digest holds the cache to MAX_ENTRIES × a few hundred
 * bytes whatever the tokens weigh (decision 0073).
 */
@Injectable()
export class VerifiedTokenCache {
  private readonly entries = new Map<string, { principal: Principal; until: number }>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get(token: string): Principal | undefined {
    const key = keyOf(token);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until > Date.now()) return entry.principal;
    this.entries.delete(key);
    return undefined;
  }

  /** Keeps a token that has just verified. */
  remember(token: string, principal: Principal): void {
    const ttl = this.config.authCacheMs;
    if (ttl === 0) return;
    const { exp } = decodeJwt(token);
    const until = Math.min(Date.now() + ttl, typeof exp === 'number' ? exp * 1000 : 0);
    if (until <= Date.now()) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(keyOf(token), { principal, until });
  }

  clear(): void {
    this.entries.clear();
  }
}

/** The cache's key for a token: its SHA-256 (43 characters), so that what is kept does not grow with the token. */
function keyOf(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}
