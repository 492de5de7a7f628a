import { DynamicModule, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { ApiAuthGuard } from '#common/auth/auth.guard.js';
import { ApiExceptionFilter } from '#common/errors/api-exception.filter.js';
import { HealthController } from '#common/health/health.controller.js';
import { JsonBodyMiddleware } from '#common/http/json-body.middleware.js';
import { RouteCatalog } from '#common/http/route-catalog.js';
import { MetricsController } from '#common/metrics/metrics.controller.js';
import { InfrastructureModule, type RuntimeOptions } from './infrastructure.module.js';
import { AppsModule } from '#modules/apps/apps.module.js';
import { AuditModule } from '#modules/audit/audit.module.js';
import { AuthModule } from '#modules/auth/auth.module.js';
import { CompaniesAsKycOwnersModule, CompaniesModule } from '#modules/companies/companies.module.js';
import { KycModule } from '#modules/kyc/kyc.module.js';
import { UsersAsKycOwnersModule, UsersModule } from '#modules/users/users.module.js';
import { WalletModule } from '#modules/wallet/wallet.module.js';
import { TransfersModule } from '#modules/transfers/transfers.module.js';
import { WalletReadModule } from '#modules/wallet/wallet-read.module.js';
import { MobileModule } from '#modules/mobile/mobile.module.js';
import { WebhooksModule } from '#modules/webhooks/webhooks.module.js';

export interface AppModuleOptions extends RuntimeOptions {
  /** Host the queue consumers in this process (the embedded database's single-process mode). */
  runWorker: boolean;
  /** Extra modules (the test suite's fixtures). */
  extraModules?: DynamicModule['imports'];
}

/** The HTTP API. */
@Module({})
export class AppModule implements NestModule {
  static forRoot(options: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        InfrastructureModule.forRoot(options),
        AppsModule,
        AuditModule,
        AuthModule,
        WebhooksModule,
        MobileModule,
        UsersModule,
        CompaniesModule,
        KycModule,
        UsersAsKycOwnersModule,
        CompaniesAsKycOwnersModule,
        WalletReadModule,
        WalletModule,
        TransfersModule,
        // The consumers' code (undici, the SMPP client, the processors) is loaded only when they run here.
        ...(options.runWorker
          ? [
              import('./worker-processors.module.js').then(({ WorkerProcessorsModule }) => ({
                module: WorkerProcessorsModule,
              })),
            ]
          : []),
        ...(options.extraModules ?? []),
      ],
      controllers: [HealthController, MetricsController],
      providers: [
        RouteCatalog,
        { provide: APP_GUARD, useClass: ApiAuthGuard },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(JsonBodyMiddleware).forRoutes('*splat');
  }
}
