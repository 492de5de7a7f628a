import { Module } from '@nestjs/common';
import { WebhooksWorkerModule } from '#modules/webhooks/webhooks-worker.module.js';
import { MobileWorkerModule } from '#modules/mobile/mobile-worker.module.js';
import { KycWorkerModule } from '#modules/kyc/kyc-worker.module.js';
import { TransfersWorkerModule } from '#modules/transfers/transfers-worker.module.js';
import { WorkerHost } from '#common/queue/worker-host.js';
import { PruneUsedAssertionsProcessor } from '#modules/auth/prune-used-assertions.processor.js';

/**
 * The consumers of every queue. Imported by the worker process, and by the API
 * only on the embedded database (so the quick start needs one process).
 */
@Module({
  imports: [WebhooksWorkerModule, MobileWorkerModule, KycWorkerModule, TransfersWorkerModule],
  providers: [WorkerHost, PruneUsedAssertionsProcessor],
})
export class WorkerProcessorsModule {}
