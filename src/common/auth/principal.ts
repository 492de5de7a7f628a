import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { UnauthorizedError } from '../errors/domain-errors.js';

/** An application calling with an access token from POST /oauth/app/token. */
export interface ClientPrincipal {
  readonly kind: 'client';
  readonly appId: string;
}

/** A user or company of an application, calling with a token the application signed ("BearerAuth"). */
export interface SubjectPrincipal {
  readonly kind: 'subject';
  readonly appId: string;
  /** uuid of the user or company the token speaks for: it reaches only what this owner owns. */
  readonly subject: string;
}

export type Principal = ClientPrincipal | SubjectPrincipal;

/** The authenticated caller of this request (set by the global guard). */
export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<{ user?: Principal }>().user;
  if (!principal) throw new UnauthorizedError();
  return principal;
});

/** Who did it, as ledger entries and history rows record it: `client:<appId>` or `subject:<uuid>`. */
export function actorOf(principal: Principal): string {
  return principal.kind === 'client' ? `client:${principal.appId}` : `subject:${principal.subject}`;
}
