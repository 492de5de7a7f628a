import { Module } from '@nestjs/common';
import { ClearingSimulatorProcessor } from './clearing/clearing-simulator.processor.js';
import { IdempotencyKeyPruner } from './idempotency-pruner.js';
import { TransfersModule } from './transfers.module.js';

/** Worker side of transfers: the clearing simulator's steps and its recovery sweep. */
@Module({
  imports: [TransfersModule],
  providers: [ClearingSimulatorProcessor, IdempotencyKeyPruner],
})
export class TransfersWorkerModule {}
