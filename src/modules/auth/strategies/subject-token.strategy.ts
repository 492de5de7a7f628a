import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { isUUID } from 'class-validator';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import type { SubjectPrincipal } from '#common/auth/principal.js';
import { AppsService } from '#modules/apps/apps.service.js';
import { MAX_ASSERTION_LIFETIME_SECONDS } from '../token.service.js';
import { CredentialLookupError } from '#common/auth/credential-lookup-error.js';

interface SubjectTokenPayload {
  iss?: unknown;
  sub?: unknown;
  aud?: unknown;
  iat?: unknown;
  exp?: unknown;
}

/**
 * "BearerAuth": a user token that the application signs with one of its own
 * registered keys: alg ES256, kid, iss = appId, sub = the user or company,
 * aud = {base_url}, lifetime at most 3600 s.
 */
@Injectable()
export class SubjectTokenStrategy extends PassportStrategy(Strategy, 'subject') {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    apps: AppsService,
  ) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      algorithms: ['ES256'],
      // Exactly {base_url}. A client assertion with the token endpoint as aud fails here; one with the issuer
      // {base_url} as aud fails in validate(): its sub is its iss (the appId), never a user or company.
      audience: config.publicBaseUrl,
      ignoreExpiration: false,
      jsonWebTokenOptions: { clockTolerance: config.clockSkewSeconds },
      secretOrKeyProvider: (
        _request: unknown,
        rawJwt: string,
        done: (err: unknown, key?: string) => void,
      ) => {
        let kid: unknown;
        let iss: unknown;
        try {
          const header = decodeProtectedHeader(rawJwt);
          if (header.alg !== 'ES256') return done(new Error('alg must be ES256'));
          // jsonwebtoken ignores crit; RFC 7515 §4.1.11 says a token naming an extension we do not understand (we
          // understand none) is invalid.
          if (header.crit !== undefined) return done(new Error('crit is not supported'));
          kid = header.kid;
          iss = decodeJwt(rawJwt).iss;
        } catch {
          return done(new Error('malformed token'));
        }
        if (typeof kid !== 'string' || typeof iss !== 'string')
          return done(new Error('kid and iss are required'));
        apps.findActiveKey(iss, kid).then(
          (key) =>
            key
              ? done(null, key as unknown as string) // a KeyObject: jsonwebtoken takes it as is, no PEM round trip
              : done(new Error('unknown application key')),
          (error: unknown) => done(new CredentialLookupError(error)),
        );
      },
    });
  }

  validate(payload: SubjectTokenPayload): SubjectPrincipal | false {
    const { iss, sub, aud, iat, exp } = payload;
    // jsonwebtoken takes an aud array when any one member matches: a token made for several services, which any
    // of them could replay here. Exactly {base_url}, as one value.
    if (aud !== this.config.publicBaseUrl) return false;
    // The subject becomes the id of the user or company it creates: a uuid that the routes' path and body checks
    // take (class-validator's isUUID: versions 1-8, nil, max; decisions 0042, 0091), or the record could never be
    // addressed again.
    if (typeof iss !== 'string' || typeof sub !== 'string' || !isUUID(sub)) return false;
    // uuids in the stored (lower-case) form, whatever the case the application signed them in.
    const appId = iss.toLowerCase();
    const subject = sub.toLowerCase();
    if (subject === appId) return false;
    if (typeof iat !== 'number' || typeof exp !== 'number') return false;
    if (exp - iat > MAX_ASSERTION_LIFETIME_SECONDS) return false;
    if (iat > Math.floor(Date.now() / 1000) + this.config.clockSkewSeconds) return false;
    return { kind: 'subject', appId, subject };
  }
}
