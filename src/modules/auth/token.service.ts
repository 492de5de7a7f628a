import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import {
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  SignJWT,
  type JWTPayload,
} from 'jose';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { TokenRequestError } from '#common/errors/domain-errors.js';
import { LONE_SURROGATE } from '#common/http/json-body.middleware.js';
import { AppsService } from '#modules/apps/apps.service.js';
import { JWT_BEARER_ASSERTION_TYPE, type OAuthTokenFormDto } from './dto/token.dto.js';
import { UsedAssertionEntity } from './entities/used-assertion.entity.js';
import { SigningKeysService } from './signing-keys.service.js';

export const ACCESS_TOKEN_TYP = 'at+jwt';
export const MAX_ASSERTION_LIFETIME_SECONDS = 3600;
/** The longest jti kept (UTF-16 code units). */
const MAX_JTI_LENGTH = 200;

export interface IssuedToken {
  type: 'Bearer';
  accessToken: string;
  expiresIn: number;
}

const refuse = (message: string) => new TokenRequestError(401, 'invalid_client', message);

/** OAuth 2.0 client credentials with a JWT client assertion (RFC 7523), ES256 only. */
@Injectable()
export class TokenService {
  private readonly audiences: string[];

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly apps: AppsService,
    private readonly signingKeys: SigningKeysService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {
    // The token endpoint (RFC 7523 §3, the interface's rule), its alias, and the issuer identifier, which
    // draft-ietf-oauth-rfc7523bis makes the audience and standard clients (oauth4webapi, openid-client) send.
    // A user token shares that audience but never passes here: an assertion needs sub = iss (decision 0024).
    this.audiences = [
      `${config.publicBaseUrl}oauth/token`,
      `${config.publicBaseUrl}oauth/app/token`,
      config.publicBaseUrl,
    ];
  }

  async issue(input: { appId: string; token: string; grantType: string }): Promise<IssuedToken> {
    if (input.grantType !== 'client_credentials') {
      throw new TokenRequestError(400, 'unsupported_grant_type', 'grantType must be client_credentials', [
        { path: 'grantType', message: 'grantType must be client_credentials', type: 'invalid' },
      ]);
    }
    const { payload, keyId } = await this.verifyAssertion(input.appId, input.token);
    // An application id is a uuid, whatever the case it was sent in: the token and everything it reaches carry
    // the stored (lower-case) form.
    const appId = input.appId.toLowerCase();
    await this.rememberJti(appId, payload);
    return this.signAccessToken(appId, keyId);
  }

  /**
   * The form a standard OAuth 2.0 client sends (RFC 6749 §4.4, RFC 7523 client authentication): the form's own
   * checks, then issue() with the appId and assertion a JSON request would carry, so an assertion passes or
   * fails exactly as it would there. client_id is optional: the assertion's sub names the client (RFC 7523 §3).
   */
  async issueForForm(form: OAuthTokenFormDto): Promise<IssuedToken> {
    if (form.grant_type !== 'client_credentials') {
      throw new TokenRequestError(400, 'unsupported_grant_type', 'grant_type must be client_credentials');
    }
    if (form.scope !== undefined) {
      throw new TokenRequestError(400, 'invalid_scope', 'the service defines no scopes');
    }
    const { client_assertion: assertion, client_assertion_type: assertionType } = form;
    if (assertion === undefined && assertionType === undefined) {
      throw refuse(
        'no client authentication: send client_assertion_type and client_assertion (private_key_jwt)',
      );
    }
    if (assertion === undefined || assertionType === undefined) {
      throw new TokenRequestError(
        400,
        'invalid_request',
        'client_assertion and client_assertion_type go together',
      );
    }
    if (assertionType !== JWT_BEARER_ASSERTION_TYPE) {
      throw refuse(`client_assertion_type must be ${JWT_BEARER_ASSERTION_TYPE} (private_key_jwt)`);
    }
    return this.issue({
      appId: this.claimedClient(assertion, form.client_id),
      token: assertion,
      grantType: 'client_credentials',
    });
  }

  /**
   * The client an assertion claims to be, before it is verified: the client_id sent beside it, which must be its
   * iss and sub, else its sub. A mismatch is refused here only to say so; verification would refuse it anyway.
   */
  private claimedClient(assertion: string, clientId: string | undefined): string {
    let claims: JWTPayload;
    try {
      claims = decodeJwt(assertion);
    } catch {
      throw refuse('the assertion is not a JWS in compact form');
    }
    if (clientId !== undefined) {
      if (claims.iss !== clientId || claims.sub !== clientId) {
        throw refuse('client_id does not match the assertion iss and sub');
      }
      return clientId;
    }
    if (typeof claims.sub !== 'string') throw refuse('the assertion has no sub naming the client');
    return claims.sub;
  }

  /** The assertion's claims, and the application key (its keyId) that signed it. */
  private async verifyAssertion(
    appId: string,
    assertion: string,
  ): Promise<{ payload: JWTPayload; keyId: string }> {
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(assertion);
    } catch {
      throw refuse('the assertion is not a JWS in compact form');
    }
    if (header.alg !== 'ES256') throw refuse('the assertion must be signed with ES256');
    // RFC 7515 §4.1.11: a critical extension the recipient does not understand makes the token invalid, and the
    // service understands none (jose would refuse it too, but as a bad signature).
    if (header.crit !== undefined) throw refuse('the assertion header names a critical extension (crit)');
    if (typeof header.kid !== 'string' || header.kid.length === 0)
      throw refuse('the assertion header has no kid');
    const keyId = header.kid;
    const key = await this.apps.findActiveKey(appId, keyId);
    if (!key) throw refuse('unknown application or key');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(assertion, key, {
        algorithms: ['ES256'],
        issuer: appId,
        subject: appId,
        audience: this.audiences,
        clockTolerance: this.config.clockSkewSeconds,
        requiredClaims: ['iss', 'sub', 'aud', 'iat', 'exp'],
      }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw refuse('the assertion has expired');
      if (error instanceof joseErrors.JWTClaimValidationFailed) {
        throw refuse(`the assertion claim ${error.claim} is not valid`);
      }
      throw refuse('the assertion signature is not valid');
    }
    // jose takes an aud array when any one member is accepted: an assertion made for several servers, which any
    // of them could replay here (draft-ietf-oauth-rfc7523bis). One value, one of ours.
    if (typeof payload.aud !== 'string') throw refuse('the assertion claim aud is not valid');
    const now = Math.floor(Date.now() / 1000);
    const iat = payload.iat as number;
    const exp = payload.exp as number;
    if (iat > now + this.config.clockSkewSeconds) throw refuse('the assertion iat is in the future');
    if (exp - iat > MAX_ASSERTION_LIFETIME_SECONDS) {
      throw refuse(`the assertion lifetime exceeds ${MAX_ASSERTION_LIFETIME_SECONDS} seconds`);
    }
    return { payload, keyId };
  }

  /**
   * An assertion that carries a jti can be used once (RFC 7523 §3, item 7). A jti of another type would turn that
   * off, so it is refused; so is one PostgreSQL cannot store as sent (NUL), or would store as another's (a lone
   * surrogate becomes U+FFFD), and any control character.
   */
  private async rememberJti(appId: string, payload: JWTPayload): Promise<void> {
    if (payload.jti === undefined) return;
    if (typeof payload.jti !== 'string') throw refuse('the assertion jti must be a string');
    if (payload.jti.length > MAX_JTI_LENGTH) throw refuse('the assertion jti is too long');
    if (LONE_SURROGATE.test(payload.jti) || /\p{Cc}/u.test(payload.jti)) {
      throw refuse('the assertion jti must be well-formed text without control characters');
    }
    const inserted = await this.dataSource
      .createQueryBuilder()
      .insert()
      .into(UsedAssertionEntity)
      // Kept while jwtVerify would still take the assertion (its exp plus the clock tolerance), so the pruner
      // never forgets a jti that could be sent again.
      .values({
        appId,
        jti: payload.jti,
        expiresAt: new Date(((payload.exp as number) + this.config.clockSkewSeconds) * 1000),
      })
      .orIgnore()
      .returning('jti')
      .execute();
    if ((inserted.raw as unknown[]).length === 0) throw refuse('the assertion was already used');
  }

  /**
   * The access token names the application key its assertion was signed with (`app_key`), so revoking that key
   * (`apps revoke-key`) ends the tokens it obtained within AUTH_CACHE_MS, not at their expiry.
   */
  private async signAccessToken(appId: string, appKeyId: string): Promise<IssuedToken> {
    const key = await this.signingKeys.current();
    const ttl = this.config.accessTokenTtlSeconds;
    const accessToken = await new SignJWT({ client_id: appId, token_use: 'access', app_key: appKeyId })
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: ACCESS_TOKEN_TYP })
      .setIssuer(this.config.publicBaseUrl)
      .setAudience(this.config.publicBaseUrl)
      .setSubject(appId)
      .setIssuedAt()
      .setExpirationTime(`${ttl}s`)
      .setJti(randomUUID())
      .sign(key.privateKey);
    return { type: 'Bearer', accessToken, expiresIn: ttl };
  }
}
