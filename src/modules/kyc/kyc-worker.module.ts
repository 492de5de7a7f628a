import { Module } from '@nestjs/common';
import { IdentityModule } from './identity.module.js';
import { KycSimulatorProcessor } from './kyc-sessions/kyc-simulator.js';

/** Worker side of identity: the KYC simulator's verifications and its recovery sweep. */
@Module({
  imports: [IdentityModule],
  providers: [KycSimulatorProcessor],
})
export class IdentityWorkerModule {}
