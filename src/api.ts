import 'reflect-metadata';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import type { DatabaseRuntime } from '#common/database/database-runtime.js';
import { rootLogger } from '#common/logging/logging.js';
import { NEST_LOG_OPTIONS, useNestPinoLogger } from '#common/logging/pino-logger.js';
import type { AppConfig } from '#config/app-config.js';
import { ApiSupervisor, isApiProcessOfCluster, receiveRuntime } from './api-cluster.js';
import { AppModule } from './app.module.js';
import {
  leaveDatabase,
  loadConfigOrExit,
  onShutdownSignal,
  prepareRuntime,
  runUntilSignal,
} from './bootstrap.js';
import { configureApp } from '#common/http/configure-app.js';
import { PresetPrototypesExpressAdapter } from '#common/http/express-adapter.js';

/** Builds the Nest application and listens on PORT. */
async function listen(
  config: AppConfig,
  database: DatabaseRuntime,
  runWorker: boolean,
  slot?: number,
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot({ config, database, role: 'api', runWorker, slot }),
    new PresetPrototypesExpressAdapter(),
    { bodyParser: false, ...NEST_LOG_OPTIONS },
  );
  useNestPinoLogger(app);
  configureApp(app, config);
  try {
    await app.listen(config.port);
  } catch (error) {
    // The application has started its consumers and pools: close them before the database goes away.
    await app.close().catch(() => undefined);
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`port ${config.port} is in use: stop the process that listens on it, or set PORT`, {
        cause: error,
      });
    }
    throw error;
  }
  return app;
}

/** The HTTP API (and, on the embedded database, the queue worker too). */
async function main(): Promise<void> {
  const runtime = await prepareRuntime('api');
  const { config, database, logger } = runtime;
  if (config.apiProcesses > 1) return supervise(config, database, logger);
  await runUntilSignal(runtime, 'API', async () => {
    const app = await listen(config, database, database.embedded !== undefined);
    logger.info({ port: config.port, baseUrl: config.publicBaseUrl }, 'API listening');
    return () => app.close();
  });
}

/** API_PROCESSES=N: this process did the one-time start; N API processes serve the port (decision 0033). */
async function supervise(config: AppConfig, database: DatabaseRuntime, logger: Logger): Promise<void> {
  const supervisor = new ApiSupervisor({
    exec: fileURLToPath(new URL('./main.js', import.meta.url)),
    count: config.apiProcesses,
    port: config.port,
    databaseUrl: database.url,
    consumersInApi: database.embedded !== undefined,
    logger,
  });
  onShutdownSignal(logger, async () => {
    await supervisor.stop();
    await leaveDatabase(database, logger);
  });
  try {
    await supervisor.start();
    logger.info(
      { port: config.port, baseUrl: config.publicBaseUrl, processes: config.apiProcesses },
      'API listening',
    );
  } catch (error) {
    logger.fatal({ err: error }, 'API failed to start');
    await leaveDatabase(database, logger);
    process.exit(1);
  }
}

/**
 * One of the N API processes: the primary gives it the database; it never migrates nor stops the database.
 * It stops on SIGTERM/SIGINT, and when the primary is gone (its IPC channel closed).
 */
async function apiProcess(): Promise<void> {
  const runtime = await receiveRuntime();
  const config = loadConfigOrExit();
  const logger = rootLogger(config, { service: 'wallet', role: 'api', slot: runtime.slot, pid: process.pid });
  try {
    const app = await listen(config, { url: runtime.databaseUrl }, runtime.runConsumers, runtime.slot);
    logger.debug({ port: config.port, consumers: runtime.runConsumers }, 'API process listening');
    const orphaned = () => process.kill(process.pid, 'SIGTERM');
    process.once('disconnect', orphaned);
    onShutdownSignal(logger, async () => {
      process.off('disconnect', orphaned);
      await app.close();
    });
  } catch (error) {
    logger.fatal({ err: error }, 'API process failed to start');
    process.exit(1);
  }
}

/** The API process (main.ts loads this after limiting the heap's growth). */
export async function runApi(): Promise<void> {
  await (isApiProcessOfCluster() ? apiProcess() : main());
}
