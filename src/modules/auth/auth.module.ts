import { MiddlewareConsumer, Module, NestModule, OnModuleInit, RequestMethod } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { AppsModule } from '#modules/apps/apps.module.js';
import { AuthorizationServerMetadataController } from './authorization-server-metadata.controller.js';
import { JwksController } from './jwks.controller.js';
import { SigningKeyAuditService } from './signing-key-audit.service.js';
import { SigningKeysModule } from './signing-keys.module.js';
import { SigningKeysService } from './signing-keys.service.js';
import { ClientCredentialsStrategy } from './strategies/client-credentials.strategy.js';
import { SubjectTokenStrategy } from './strategies/subject-token.strategy.js';
import { TokenRateLimitMiddleware } from './token-rate-limit.middleware.js';
import { TokenController } from './token.controller.js';
import { TokenService } from './token.service.js';

/** HTTP side of authentication: the token endpoint, the JWKS, the RFC 8414 metadata and the two bearer schemes. */
@Module({
  imports: [AppsModule, SigningKeysModule, PassportModule],
  controllers: [TokenController, JwksController, AuthorizationServerMetadataController],
  providers: [TokenService, ClientCredentialsStrategy, SubjectTokenStrategy],
})
export class AuthModule implements NestModule, OnModuleInit {
  constructor(
    private readonly signingKeys: SigningKeysService,
    private readonly keyAudit: SigningKeyAuditService,
  ) {}

  /**
   * The API does not start without a key to sign with (a missing SIGNING_KEYS_FILE stops it here), and records
   * any key change the audit trail lacks (a `keys` command cut short, the key generated in development).
   */
  async onModuleInit(): Promise<void> {
    await this.signingKeys.current();
    await this.keyAudit.reconcile();
  }

  /** One limiter for both token routes, so their requests count together. */
  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(TokenRateLimitMiddleware)
      .forRoutes(
        { path: 'oauth/app/token', method: RequestMethod.POST },
        { path: 'oauth/token', method: RequestMethod.POST },
      );
  }
}
