import { DynamicModule, Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { VerifiedTokenCache } from '#common/auth/verified-token-cache.js';
import {
  DATABASE_RUNTIME,
  type DatabaseRuntime,
  type ProcessRole,
} from '#common/database/database-runtime.js';
import { PG_POOL, pgPoolProvider } from '#common/database/pg-pool.js';
import { ReadDatabase, REPLICA_POOL } from '#common/database/read-database.js';
import { rootLogger } from '#common/logging/logging.js';
import { LoggingModule } from '#common/logging/pino-logger.js';
import { MetricsRegistry } from '#common/metrics/metrics.registry.js';
import { SharedRateLimitStores } from '#common/http/shared-rate-limit-store.js';
import { QUEUE_CONNECTION, QueueFactory, type QueueConnection } from '#common/queue/queue.factory.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import pg from 'pg';
import { dataSourceOptions, replicaPoolConfig } from './data-source.js';

/** In a cluster every line says which API process wrote it (slot and pid), so an access line names its server. */
const clusterLogBase = (slot: number | undefined): Record<string, number> =>
  slot === undefined ? {} : { slot, pid: process.pid };

/** The streaming replica's pool (DATABASE_READ_URL), connected on first use; null without one. */
function replicaPool(config: AppConfig, role: ProcessRole): pg.Pool | null {
  if (config.databaseReadUrl === undefined) return null;
  const pool = new pg.Pool(
    replicaPoolConfig(
      config.databaseReadUrl,
      config.databasePoolSize,
      `wallet-${role}-read`,
      config.dbStatementTimeoutMs,
    ),
  );
  // An idle connection the replica dropped (restart, failover) leaves the pool; the next read opens another.
  pool.on('error', () => undefined);
  return pool;
}

export interface RuntimeOptions {
  config: AppConfig;
  database: DatabaseRuntime;
  role: ProcessRole;
  /** The place of this API process among `API_PROCESSES=N` (decision 0033): its log lines carry it and the pid. */
  slot?: number;
}

/**
 * What every process (API, worker, CLI) shares: config, logger, the database
 * (the DataSource and its pg Pool, PG_POOL), the queue factory and the rate-limit stores shared across processes. Built from a runtime resolved before Nest starts.
 */
@Global()
@Module({})
export class InfrastructureModule {
  static forRoot({ config, database, role, slot }: RuntimeOptions): DynamicModule {
    const queueConnection: QueueConnection = config.redisUrl
      ? { kind: 'redis', url: config.redisUrl, prefix: config.queuePrefix }
      : { kind: 'postgres', url: database.url };
    return {
      module: InfrastructureModule,
      imports: [
        DiscoveryModule,
        LoggingModule.forRoot(rootLogger(config, { service: 'wallet', role, ...clusterLogBase(slot) })),
        TypeOrmModule.forRoot({
          ...dataSourceOptions(
            database.url,
            config.databasePoolSize,
            `wallet-${role}`,
            config.dbStatementTimeoutMs,
          ),
          retryAttempts: 3,
          retryDelay: 1000,
        }),
      ],
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: DATABASE_RUNTIME, useValue: database },
        { provide: QUEUE_CONNECTION, useValue: queueConnection },
        pgPoolProvider,
        { provide: REPLICA_POOL, useValue: replicaPool(config, role) },
        ReadDatabase,
        QueueFactory,
        MetricsRegistry,
        VerifiedTokenCache,
        SharedRateLimitStores,
      ],
      exports: [
        APP_CONFIG,
        DATABASE_RUNTIME,
        QUEUE_CONNECTION,
        PG_POOL,
        ReadDatabase,
        QueueFactory,
        MetricsRegistry,
        VerifiedTokenCache,
        SharedRateLimitStores,
        DiscoveryModule,
      ],
    };
  }
}
