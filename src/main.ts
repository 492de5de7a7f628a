import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { NestPinoLogger } from '#common/logging/pino-logger.js';
import { AppModule } from './app.module.js';
import { limitHeapGrowth, onShutdownSignal, prepareRuntime } from './bootstrap.js';
import { configureApp } from '#common/http/configure-app.js';

/** The HTTP API (and, on the embedded database, the queue worker too). */
async function main(): Promise<void> {
  const { config, database, logger } = await prepareRuntime('api');
  limitHeapGrowth(config.apiHeapGrowthPercent);
  try {
    const app = await NestFactory.create<NestExpressApplication>(
      AppModule.forRoot({ config, database, role: 'api', runWorker: database.embedded !== undefined }),
      { bodyParser: false, bufferLogs: true },
    );
    app.useLogger(app.get(NestPinoLogger));
    configureApp(app, config);
    await app.listen(config.port);
    logger.info({ port: config.port, baseUrl: config.publicBaseUrl }, 'API listening');
    onShutdownSignal(logger, async () => {
      await app.close();
      await database.embedded?.stop();
    });
  } catch (error) {
    logger.fatal({ err: error }, 'API failed to start');
    await database.embedded?.stop();
    process.exit(1);
  }
}

await main();
