import type { ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';
import type { AppConfig } from '#config/app-config.js';
import { UnauthorizedError } from '../errors/domain-errors.js';
import { AUTH_POLICY_KEY } from './auth.decorator.js';
import { ApiAuthGuard } from './auth.guard.js';
import type { Principal } from './principal.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

/** A token VerifiedTokenCache can read (it decodes `exp`; the signature is the strategies' business). */
function token(subject: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'ES256' })}.${part({ sub: subject, exp: Math.floor(Date.now() / 1000) + 600 })}.sig`;
}

/**
 * The global guard with its passport guards replaced by a fake verification: counts calls, takes a turn of the
 * event loop, then accepts (setting the principal) or refuses.
 */
function guardWith(authCacheMs: number, accept: (call: number) => boolean) {
  const config = { authCacheMs } as AppConfig;
  const reflector = {
    getAllAndOverride: (key: string) => (key === AUTH_POLICY_KEY ? 'either' : undefined),
  } as unknown as Reflector;
  const guard = new ApiAuthGuard(reflector, config, new VerifiedTokenCache(config));
  const calls = { count: 0 };
  const fake = {
    canActivate: async (context: ExecutionContext) => {
      const call = ++calls.count;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (!accept(call)) throw new UnauthorizedError();
      const request = context.switchToHttp().getRequest<{ user?: Principal }>();
      request.user = { kind: 'client', appId: `app-${call}` };
      return true;
    },
  };
  Object.assign(guard as unknown as Record<string, unknown>, { either: fake, clientOnly: fake });
  return { guard, calls };
}

function contextFor(bearer: string): { context: ExecutionContext; request: Record<string, unknown> } {
  const request: Record<string, unknown> = { headers: { authorization: `Bearer ${bearer}` } };
  const context = {
    getHandler: () => undefined,
    getClass: () => undefined,
    switchToHttp: () => ({ getRequest: () => request }),
  } as unknown as ExecutionContext;
  return { context, request };
}

describe('ApiAuthGuard: concurrent requests with one token', () => {
  it('verify it once; the others take its principal', async () => {
    const { guard, calls } = guardWith(1000, () => true);
    const bearer = token('a');
    const requests = Array.from({ length: 5 }, () => contextFor(bearer));
    await expect(Promise.all(requests.map(({ context }) => guard.canActivate(context)))).resolves.toEqual(
      Array(5).fill(true),
    );
    expect(calls.count).toBe(1);
    for (const { request } of requests) expect(request.user).toEqual({ kind: 'client', appId: 'app-1' });
  });

  it('verify on their own when that verification fails, and get their own answer', async () => {
    const { guard, calls } = guardWith(1000, (call) => call > 1);
    const bearer = token('b');
    const requests = Array.from({ length: 3 }, () => contextFor(bearer));
    const results = await Promise.allSettled(requests.map(({ context }) => guard.canActivate(context)));
    expect(results[0].status).toBe('rejected');
    expect(results.slice(1).every((result) => result.status === 'fulfilled')).toBe(true);
    expect(calls.count).toBe(3);
  });

  it('each verify with AUTH_CACHE_MS=0', async () => {
    const { guard, calls } = guardWith(0, () => true);
    const bearer = token('c');
    await Promise.all(Array.from({ length: 3 }, () => guard.canActivate(contextFor(bearer).context)));
    expect(calls.count).toBe(3);
  });

  it('different tokens are verified separately', async () => {
    const { guard, calls } = guardWith(1000, () => true);
    await Promise.all(
      [token('d'), token('e')].map((bearer) => guard.canActivate(contextFor(bearer).context)),
    );
    expect(calls.count).toBe(2);
  });
});
