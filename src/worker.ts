import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NEST_LOG_OPTIONS, useNestPinoLogger } from '#common/logging/pino-logger.js';
import { prepareRuntime, runUntilSignal } from './bootstrap.js';
import { InfrastructureModule, type RuntimeOptions } from './infrastructure.module.js';
import { WalletReadModule } from '#modules/wallet/wallet-read.module.js';
import { WorkerProcessorsModule } from './worker-processors.module.js';

@Module({})
class WorkerAppModule {
  static forRoot(options: RuntimeOptions): DynamicModule {
    return {
      module: WorkerAppModule,
      imports: [
        InfrastructureModule.forRoot(options),
        // Users and companies come with the wallet (the clearing simulator's accounts): they need OWNER_ACCOUNTS.
        WalletReadModule,
        WorkerProcessorsModule,
      ],
    };
  }
}

/** The queue worker process: no HTTP routes; run one or more beside the API. */
async function main(): Promise<void> {
  const runtime = await prepareRuntime('worker');
  const { config, database, logger } = runtime;
  await runUntilSignal(runtime, 'worker', async () => {
    const app = await NestFactory.createApplicationContext(
      WorkerAppModule.forRoot({ config, database, role: 'worker' }),
      NEST_LOG_OPTIONS,
    );
    useNestPinoLogger(app);
    await app.init();
    logger.info({ backend: config.redisUrl ? 'redis' : 'postgres' }, 'worker running');
    return () => app.close();
  });
}

await main();
