import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { UnauthorizedError } from '../errors/domain-errors.js';

/** The HTTP request a principal acts in, as the audit trail records it (docs/decisions/0032-audit-trail.md). */
export interface RequestContext {
  /** The request id (X-Request-Id). */
  readonly id: string;
  /** The route template: `POST /v1/users/{uuid}/kyc-data`. */
  readonly action: string;
}

/** An application calling with an access token from POST /oauth/app/token. */
export interface ClientPrincipal {
  readonly kind: 'client';
  readonly appId: string;
  /** Set by CurrentPrincipal for the request at hand; absent where no request is (the guard's cache, tests). */
  readonly request?: RequestContext;
}

/** A user or company of an application, calling with a token the application signed ("BearerAuth"). */
export interface SubjectPrincipal {
  readonly kind: 'subject';
  readonly appId: string;
  /** uuid of the user or company the token speaks for: it reaches only what this owner owns. */
  readonly subject: string;
  readonly request?: RequestContext;
}

export type Principal = ClientPrincipal | SubjectPrincipal;

interface RoutedRequest {
  user?: Principal;
  id?: string;
  method: string;
  baseUrl?: string;
  route?: { path?: string };
}

/** `METHOD /path/{param}`: the matched route's template, as the OpenAPI document names the operation. */
export function routeTemplateOf(request: RoutedRequest): string {
  const path = `${request.baseUrl ?? ''}${request.route?.path ?? ''}`.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
  return `${request.method} ${path}`;
}

/**
 * The authenticated caller of this request (set by the global guard), with the request it acts in (id and route
 * template, for the audit trail). A copy per request: the guard's principal may be cached across requests.
 */
export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  const request = ctx.switchToHttp().getRequest<RoutedRequest>();
  const principal = request.user;
  if (!principal) throw new UnauthorizedError();
  return { ...principal, request: { id: request.id ?? '', action: routeTemplateOf(request) } };
});

/** Who did it, as ledger entries and history rows record it: `client:<appId>` or `subject:<uuid>`. */
export function actorOf(principal: Principal): string {
  return principal.kind === 'client' ? `client:${principal.appId}` : `subject:${principal.subject}`;
}
