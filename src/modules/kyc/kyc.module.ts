import path from 'node:path';
import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { CompaniesController } from './companies/companies.controller.js';
import { CompaniesService } from './companies/companies.service.js';
import { DOCUMENT_STORAGE } from './documents/document-storage.port.js';
import { DocumentsController } from './documents/documents.controller.js';
import { DocumentsService } from './documents/documents.service.js';
import { LocalDiskStorage } from './documents/local-disk.storage.js';
import { KycDataController } from './kyc/kyc-data.controller.js';
import { KycDataService } from './kyc/kyc-data.service.js';
import { KYC_PROVIDER } from './kyc-sessions/kyc-provider.port.js';
import { KycSessionsController } from './kyc-sessions/kyc-sessions.controller.js';
import { KycSessionsService } from './kyc-sessions/kyc-sessions.service.js';
import { SimulatorKycProvider } from './kyc-sessions/kyc-simulator.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { UsersController } from './users/users.controller.js';
import { UsersService } from './users/users.service.js';

/** Users, companies, their KYC data, documents and KYC sessions. The wallet reads owners through UsersService/CompaniesService. */
@Module({
  imports: [
    WebhooksModule,
    // Uploads are held in memory up to DOCUMENT_MAX_BYTES (+1 byte, so an oversized file is seen and refused).
    MulterModule.registerAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        limits: { fileSize: config.documentMaxBytes + 1, files: 1, fields: 5, fieldSize: 1024, parts: 8 },
      }),
    }),
  ],
  controllers: [
    UsersController,
    CompaniesController,
    KycDataController,
    DocumentsController,
    KycSessionsController,
  ],
  providers: [
    UsersService,
    CompaniesService,
    KycDataService,
    DocumentsService,
    KycSessionsService,
    SimulatorKycProvider,
    { provide: KYC_PROVIDER, useExisting: SimulatorKycProvider },
    {
      provide: DOCUMENT_STORAGE,
      inject: [APP_CONFIG],
      // The AWS SDK (~24 MiB resident once loaded) is imported only when documents go to a bucket.
      useFactory: async (config: AppConfig) =>
        config.documentStorage.kind === 's3'
          ? new (await import('./documents/s3.storage.js')).S3Storage(config.documentStorage)
          : new LocalDiskStorage(path.join(config.dataDir, 'documents')),
    },
  ],
  exports: [UsersService, CompaniesService, DocumentsService, KycSessionsService, SimulatorKycProvider],
})
export class IdentityModule {}
