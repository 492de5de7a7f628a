import { Global, Module, type DynamicModule, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { PG_POOL } from '../src/common/database/pg-pool.js';
import { ReadDatabase, REPLICA_POOL } from '../src/common/database/read-database.js';
import { rootLogger } from '../src/common/logging/logging.js';
import { LoggingModule } from '../src/common/logging/pino-logger.js';
import { MetricsRegistry } from '../src/common/metrics/metrics.registry.js';
import { QUEUE_CONNECTION, QueueFactory } from '../src/common/queue/queue.factory.js';
import { APP_CONFIG, loadConfig } from '../src/config/app-config.js';
import { dataSourceOptions } from '../src/data-source.js';
import { CompaniesAsKycOwnersModule, CompaniesModule } from '../src/modules/companies/companies.module.js';
import { CompaniesService } from '../src/modules/companies/companies.service.js';
import { KycWorkerModule } from '../src/modules/kyc/kyc-worker.module.js';
import { KycModule } from '../src/modules/kyc/kyc.module.js';
import { KycSessionsService } from '../src/modules/kyc/sessions/kyc-sessions.service.js';
import { KycSimulatorProcessor } from '../src/modules/kyc/sessions/kyc-simulator.processor.js';
import { UsersAsKycOwnersModule, UsersModule } from '../src/modules/users/users.module.js';
import { UsersService } from '../src/modules/users/users.service.js';
import { WalletReadModule } from '../src/modules/wallet/wallet-read.module.js';

/**
 * The module graph of users, companies and kyc (docs/decisions/0026-identity-modules.md): a process that
 * loads users or companies without the wallet's OWNER_ACCOUNTS, or kyc without the owners' lookups, must
 * fail at boot rather than run without them. Compiling resolves every provider and opens no connection,
 * so what InfrastructureModule gives is built here for real but never connected.
 */
const URL = 'postgres://boot-check@127.0.0.1:1/none';
const config = loadConfig({
  NODE_ENV: 'test',
  DATABASE_URL: URL,
  DATA_DIR: '/tmp/wallet-boot-check',
  PUBLIC_BASE_URL: 'http://wallet.test/v1/',
  LOG_LEVEL: 'silent',
});

@Global()
@Module({
  providers: [
    { provide: APP_CONFIG, useValue: config },
    { provide: DataSource, useValue: new DataSource(dataSourceOptions(URL, 1, 'boot-check')) },
    { provide: QUEUE_CONNECTION, useValue: { kind: 'postgres', url: URL } },
    { provide: PG_POOL, useValue: new pg.Pool({ connectionString: URL }) },
    { provide: REPLICA_POOL, useValue: null },
    ReadDatabase,
    QueueFactory,
    MetricsRegistry,
  ],
  exports: [APP_CONFIG, DataSource, QUEUE_CONNECTION, ReadDatabase, QueueFactory, MetricsRegistry],
})
class UnconnectedInfrastructure {}

const compile = (...modules: (Type | DynamicModule)[]) =>
  Test.createTestingModule({
    imports: [
      UnconnectedInfrastructure,
      LoggingModule.forRoot(rootLogger(config, { service: 'wallet', role: 'worker' })),
      ...modules,
    ],
  }).compile();

describe('identity modules at boot', () => {
  it.each([
    ['UsersModule', UsersModule, 'UsersService'],
    ['CompaniesModule', CompaniesModule, 'CompaniesService'],
  ])('%s without the wallet’s OWNER_ACCOUNTS does not boot', async (_name, module, service) => {
    await expect(compile(module)).rejects.toThrow(
      new RegExp(`dependencies of the ${service} \\(DataSource, \\?\\)[\\s\\S]*Symbol\\(OWNER_ACCOUNTS\\)`),
    );
  });

  it('users and companies boot with WalletReadModule', async () => {
    const app = await compile(UsersModule, CompaniesModule, WalletReadModule);
    expect(app.get(UsersService)).toBeInstanceOf(UsersService);
    expect(app.get(CompaniesService)).toBeInstanceOf(CompaniesService);
    await app.close();
  });

  it('kyc without the lookups of users and companies does not boot', async () => {
    await expect(compile(KycModule, WalletReadModule)).rejects.toThrow(
      /dependencies of the KycOwners \(\?, Symbol\(KYC_OWNERS\.COMPANY\)\)[\s\S]*Symbol\(KYC_OWNERS\.USER\)/,
    );
    await expect(compile(KycModule, WalletReadModule, UsersAsKycOwnersModule)).rejects.toThrow(
      /dependencies of the KycOwners[\s\S]*Symbol\(KYC_OWNERS\.COMPANY\)/,
    );
  });

  it('kyc boots with them, and the worker’s side of kyc boots alone (it reaches no owner)', async () => {
    const api = await compile(
      KycModule,
      UsersAsKycOwnersModule,
      CompaniesAsKycOwnersModule,
      WalletReadModule,
    );
    expect(api.get(KycSessionsService)).toBeInstanceOf(KycSessionsService);
    await api.close();
    const worker = await compile(KycWorkerModule);
    expect(worker.get(KycSimulatorProcessor)).toBeInstanceOf(KycSimulatorProcessor);
    await worker.close();
  });
});
