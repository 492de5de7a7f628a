import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { UnauthorizedError } from '../errors/domain-errors.js';
import { ERROR_STYLE_KEY, type ErrorStyle } from '../errors/error-style.js';
import { ERROR_STYLE_REQUEST_KEY } from '../errors/api-exception.filter.js';
import { AUTH_POLICY_KEY, type AuthPolicy } from './auth.decorator.js';
import { CredentialLookupError } from './credential-lookup-error.js';
import { carriesOperatorToken } from './operator-credentials.js';
import type { Principal } from './principal.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

/** Passport names of the two schemes; the strategies live in the auth module. */
export const CC_STRATEGY = 'cc';
export const SUBJECT_STRATEGY = 'subject';

function passportGuard(strategies: string[]) {
  return class extends AuthGuard(strategies) {
    override handleRequest<T>(error: unknown, principal: T, info?: unknown): T {
      if (error) throw error instanceof CredentialLookupError ? error.reason : error;
      if (!principal) {
        const lookup = (Array.isArray(info) ? info : [info]).find(
          (item): item is CredentialLookupError => item instanceof CredentialLookupError,
        );
        if (lookup) throw lookup.reason;
        throw new UnauthorizedError();
      }
      return principal;
    }
  };
}

const ClientOnlyGuard = passportGuard([CC_STRATEGY]);
const EitherGuard = passportGuard([CC_STRATEGY, SUBJECT_STRATEGY]);

/**
 * The global guard. Deny by default: a route is reachable only through the
 * policy its decorator declares (see auth.decorator.ts).
 */
@Injectable()
export class ApiAuthGuard implements CanActivate {
  private readonly clientOnly = new ClientOnlyGuard();
  private readonly either = new EitherGuard();
  /** Verifications in flight, by token: settle (never reject) when the verification has finished. */
  private readonly verifying = new Map<string, Promise<void>>();

  constructor(
    private readonly reflector: Reflector,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly verified: VerifiedTokenCache,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    const request = context.switchToHttp().getRequest<Record<string, unknown>>();
    request[ERROR_STYLE_REQUEST_KEY] =
      this.reflector.getAllAndOverride<ErrorStyle>(ERROR_STYLE_KEY, targets) ?? 'json';
    const policy = this.reflector.getAllAndOverride<AuthPolicy | undefined>(AUTH_POLICY_KEY, targets);
    switch (policy) {
      case 'public':
        return true;
      case 'cc':
        return this.viaPassport(context, request, 'cc');
      case 'either':
        return this.viaPassport(context, request, 'either');
      case 'ops':
        return this.operator(request);
      default:
        throw new UnauthorizedError();
    }
  }

  /** The policy's strategies, unless the same token verified moments ago (VerifiedTokenCache). */
  private async viaPassport(
    context: ExecutionContext,
    request: Record<string, unknown>,
    policy: 'cc' | 'either',
  ): Promise<boolean> {
    const token = bearerToken((request.headers as Record<string, string | undefined>).authorization);
    if (token !== undefined && this.fromCache(request, token, policy)) return true;
    // The same token is being verified for another request (every connection of a client misses the cache at
    // once when its entry expires): wait for that verification and take its principal, as if this request had
    // come a moment later; if it failed, verify this request on its own.
    const pending = token === undefined ? undefined : this.verifying.get(token);
    if (pending) {
      await pending;
      if (this.fromCache(request, token!, policy)) return true;
    }
    const guard = policy === 'cc' ? this.clientOnly : this.either;
    const verification = (guard.canActivate(context) as Promise<boolean>).then((allowed) => {
      if (allowed && token !== undefined) this.verified.remember(token, request.user as Principal);
      return allowed;
    });
    if (token === undefined || pending || this.config.authCacheMs === 0) return verification;
    const settled = verification.then(
      () => undefined,
      () => undefined,
    );
    this.verifying.set(token, settled);
    void settled.then(() => {
      if (this.verifying.get(token) === settled) this.verifying.delete(token);
    });
    return verification;
  }

  /** The principal of a token that verified moments ago, if the policy accepts it. */
  private fromCache(request: Record<string, unknown>, token: string, policy: 'cc' | 'either'): boolean {
    const cached = this.verified.get(token);
    if (!cached || (policy === 'cc' && cached.kind !== 'client')) return false;
    request.user = cached;
    return true;
  }

  private operator(request: Record<string, unknown>): boolean {
    const header = (request.headers as Record<string, string | undefined>).authorization;
    if (!carriesOperatorToken(header, this.config.metricsToken)) throw new UnauthorizedError();
    return true;
  }
}

/**
 * RFC 6750's credentials, `Bearer 1*SP b64token` (the scheme in any case, RFC 7235): the token, or undefined
 * without an Authorization header. Anything else in the header is refused here: Passport's extractor takes the
 * second word and ignores what follows, so `Bearer <token> junk` was accepted.
 */
function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = BEARER_CREDENTIALS.exec(header);
  if (!match) throw new UnauthorizedError();
  return match[1];
}

const BEARER_CREDENTIALS = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;
