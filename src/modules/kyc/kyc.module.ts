import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { DocumentStorageModule } from './documents/document-storage.module.js';
import { DocumentsController } from './documents/documents.controller.js';
import { DocumentsService } from './documents/documents.service.js';
import { KycOwners } from './owners/kyc-owners.js';
import { KYC_PROVIDER } from './sessions/kyc-provider.port.js';
import { KycSessionsController } from './sessions/kyc-sessions.controller.js';
import { KycSessionsService } from './sessions/kyc-sessions.service.js';
import { SimulatorKycProvider } from './sessions/simulator-kyc.provider.js';

/**
 * What users and companies share as owners of KYC material: their documents
 * (bytes behind the DOCUMENT_STORAGE port) and KYC sessions (steps decided by
 * the KYC_PROVIDER port; the simulator by default). Owners are reached through
 * the KYC_OWNERS lookups that UsersAsKycOwnersModule and
 * CompaniesAsKycOwnersModule provide: kyc never imports users or companies
 * (docs/decisions/0026-identity-modules.md). The provider's verdicts are
 * applied in the worker (KycWorkerModule).
 */
@Module({
  imports: [
    // Uploads are held in memory up to DOCUMENT_MAX_BYTES (+1 byte, so an oversized file is seen and refused),
    // once the UploadAllowed guard has checked the owner and the daily limit (decision 0074).
    MulterModule.registerAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        limits: { fileSize: config.documentMaxBytes + 1, files: 1, fields: 5, fieldSize: 1024, parts: 8 },
        // A part's filename without a charset is read as UTF-8, as browsers and curl send it (busboy's default,
        // latin1, stored "Pérez" as "PÃ©rez"; decision 0097).
        defParamCharset: 'utf8',
      }),
    }),
    DocumentStorageModule,
  ],
  controllers: [DocumentsController, KycSessionsController],
  providers: [
    KycOwners,
    DocumentsService,
    KycSessionsService,
    SimulatorKycProvider,
    { provide: KYC_PROVIDER, useExisting: SimulatorKycProvider },
  ],
})
export class KycModule {}
