import { Module } from '@nestjs/common';
import { WebhooksModule } from '#modules/webhooks/webhooks.module.js';
import { DocumentStorageModule } from './documents/document-storage.module.js';
import { ReapDocumentsProcessor } from './documents/reap-documents.processor.js';
import { KycSimulatorProcessor } from './sessions/kyc-simulator.processor.js';
import { KycVerificationService } from './sessions/kyc-verification.service.js';
import { SimulatorKycProvider } from './sessions/simulator-kyc.provider.js';

/**
 * Worker side of kyc: the simulator's verdicts (each emits kyc_steep_update
 * through the outbox) and its recovery sweep, which resubmits through the
 * simulator; the periodic removal of document bytes that no row names. It
 * reads an owner's row only to drop a deleted owner's verdicts, in SQL, so the
 * worker need not load users or companies for it.
 */
@Module({
  imports: [WebhooksModule, DocumentStorageModule],
  providers: [KycVerificationService, SimulatorKycProvider, KycSimulatorProcessor, ReapDocumentsProcessor],
})
export class KycWorkerModule {}
