import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiOAuth2 } from '@nestjs/swagger';

/**
 * Who may call a route. Every route declares exactly one policy; the global
 * guard refuses any route without one, and the route catalog refuses to start.
 * - `either`: an access token (OAuth2ClientCredentials) or an application-signed user token (BearerAuth);
 * - `cc`: only an access token;
 * - `public`: no credentials (token endpoint, JWKS, health, docs);
 * - `ops`: the operator token METRICS_TOKEN (metrics and dashboards).
 */
export type AuthPolicy = 'either' | 'cc' | 'public' | 'ops';

export const AUTH_POLICY_KEY = 'wallet:auth-policy';

export const CC_SCHEME = 'OAuth2ClientCredentials';
export const BEARER_SCHEME = 'BearerAuth';

/** Client credentials or bearer user token. */
export const AuthEither = () =>
  applyDecorators(
    SetMetadata(AUTH_POLICY_KEY, 'either'),
    ApiOAuth2([], CC_SCHEME),
    ApiBearerAuth(BEARER_SCHEME),
  );

/** Client credentials only. */
export const AuthClient = () => applyDecorators(SetMetadata(AUTH_POLICY_KEY, 'cc'), ApiOAuth2([], CC_SCHEME));

/** No credentials. */
export const Public = () => SetMetadata(AUTH_POLICY_KEY, 'public');

/** The operator token (METRICS_TOKEN). Its routes are not in the OpenAPI document, nor is its scheme. */
export const AuthOperator = () => SetMetadata(AUTH_POLICY_KEY, 'ops');
