import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DynamicModule, INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { OpenAPIObject } from '@nestjs/swagger';
import type { Server } from 'node:http';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module.js';
import { configureApp } from '../../src/common/http/configure-app.js';
import { PresetPrototypesExpressAdapter } from '../../src/common/http/express-adapter.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { createTestDatabase } from './database.js';

export const TEST_BASE_URL = 'http://wallet.test/v1/';

export interface TestApp {
  app: INestApplication;
  http: Server;
  config: AppConfig;
  dataSource: DataSource;
  openApi: OpenAPIObject;
  databaseUrl: string;
  dataDir: string;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  extraModules?: DynamicModule['imports'];
  runWorker?: boolean;
  /** Another test app's database (a second process of the same deployment, e.g. a worker started later); left in place on close. */
  databaseUrl?: string;
}

/**
 * The real application, configured exactly as main.ts configures it, on a
 * fresh database of its own (and Redis when the suite runs with it).
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.databaseUrl
    ? { url: options.databaseUrl, drop: () => Promise.resolve() }
    : await createTestDatabase();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-test-data-'));
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    PUBLIC_BASE_URL: TEST_BASE_URL,
    // Test files share one Redis: each app gets queues of its own.
    QUEUE_PREFIX: `t${database.url.split('/').pop()}`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
    ...options.env,
  });
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot({
      config,
      database: { url: database.url },
      role: 'api',
      runWorker: options.runWorker ?? false,
      extraModules: options.extraModules,
    }),
    new PresetPrototypesExpressAdapter(),
    { bodyParser: false, logger: false },
  );
  const openApi = configureApp(app, config);
  await app.init();
  return {
    app,
    http: app.getHttpServer() as Server,
    config,
    dataSource: app.get(DataSource),
    get openApi() {
      return openApi();
    },
    databaseUrl: database.url,
    dataDir,
    async close() {
      await app.close();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
