import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { ThrottlerModule } from '@nestjs/throttler';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { AppsModule } from '../apps/apps.module.js';
import { JwksController } from './jwks.controller.js';
import { SigningKeysModule } from './signing-keys.module.js';
import { ClientCredentialsStrategy } from './strategies/client-credentials.strategy.js';
import { SubjectTokenStrategy } from './strategies/subject-token.strategy.js';
import { TokenController } from './token.controller.js';
import { TokenService } from './token.service.js';

/** HTTP side of authentication: the token endpoint, the JWKS and the two bearer schemes. */
@Module({
  imports: [
    AppsModule,
    SigningKeysModule,
    PassportModule,
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => [
        { name: 'token', ttl: 60_000, limit: config.tokenRateLimitPerMinute },
      ],
    }),
  ],
  controllers: [TokenController, JwksController],
  providers: [TokenService, ClientCredentialsStrategy, SubjectTokenStrategy],
})
export class AuthModule {}
