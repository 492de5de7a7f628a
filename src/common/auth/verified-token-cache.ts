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
 */
@Injectable()
export class VerifiedTokenCache {
  private readonly entries = new Map<string, { principal: Principal; until: number }>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get(token: string): Principal | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (entry.until > Date.now()) return entry.principal;
    this.entries.delete(token);
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
    this.entries.set(token, { principal, until });
  }

  clear(): void {
    this.entries.clear();
  }
}
