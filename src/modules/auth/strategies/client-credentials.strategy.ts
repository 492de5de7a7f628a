import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { decodeProtectedHeader } from 'jose';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import type { ClientPrincipal } from '#common/auth/principal.js';
import { AppsService } from '#modules/apps/apps.service.js';
import { SigningKeysService } from '../signing-keys.service.js';
import { ACCESS_TOKEN_TYP } from '../token.service.js';
import { CredentialLookupError } from '#common/auth/credential-lookup-error.js';

interface AccessTokenPayload {
  client_id?: unknown;
  token_use?: unknown;
  sub?: unknown;
  /** The application key whose assertion obtained the token (absent in tokens issued before 2026-12-01). */
  app_key?: unknown;
}

/**
 * "OAuth2ClientCredentials": an access token issued by POST /oauth/app/token,
 * signed ES256 by one of the service's published keys (looked up by kid).
 */
@Injectable()
export class ClientCredentialsStrategy extends PassportStrategy(Strategy, 'cc') {
  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    signingKeys: SigningKeysService,
    private readonly apps: AppsService,
  ) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      algorithms: ['ES256'],
      issuer: config.publicBaseUrl,
      audience: config.publicBaseUrl,
      ignoreExpiration: false,
      secretOrKeyProvider: (
        _request: unknown,
        rawJwt: string,
        done: (err: unknown, key?: string) => void,
      ) => {
        let header: ReturnType<typeof decodeProtectedHeader>;
        try {
          header = decodeProtectedHeader(rawJwt);
        } catch {
          return done(new Error('malformed token'));
        }
        // The service writes no crit (RFC 7515 §4.1.11: an extension we do not understand makes a token invalid).
        if (
          header.alg !== 'ES256' ||
          header.typ !== ACCESS_TOKEN_TYP ||
          typeof header.kid !== 'string' ||
          header.crit !== undefined
        ) {
          return done(new Error('not an access token'));
        }
        signingKeys.publicKey(header.kid).then(
          (key) =>
            key
              ? done(null, key as unknown as string) // a KeyObject: jsonwebtoken takes it as is, no PEM round trip
              : done(new Error('unknown kid')),
          (error: unknown) => done(new CredentialLookupError(error)),
        );
      },
    });
  }

  /** Returning false (not throwing) lets the "either" policy try the bearer strategy next. */
  async validate(payload: AccessTokenPayload): Promise<ClientPrincipal | false> {
    if (payload.token_use !== 'access' || typeof payload.client_id !== 'string') return false;
    if (payload.sub !== payload.client_id) return false;
    // The application active, and the key that obtained the token not revoked (decision 0054); a token issued
    // before tokens named their key has no app_key and is checked against the application only.
    if (payload.app_key !== undefined && typeof payload.app_key !== 'string') return false;
    if (!(await this.apps.isActive(payload.client_id, payload.app_key))) return false;
    return { kind: 'client', appId: payload.client_id };
  }
}
