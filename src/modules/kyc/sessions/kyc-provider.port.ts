import type { KycStep } from './entities/kyc-session.entity.js';

/**
 * The KYC provider that verifies submitted steps. It answers asynchronously:
 * its verdict reaches KycVerificationService.complete. The default is the
 * simulator (simulator-kyc.provider.ts), which queues each step for
 * KycSimulatorProcessor (kyc-simulator.processor.ts) in the worker.
 */
export const KYC_PROVIDER = Symbol('KYC_PROVIDER');

export interface KycStepRequest {
  sessionId: string;
  step: KycStep;
  /** When the step was submitted: identifies this submission (a job id part). */
  submittedAt: Date;
}

export interface KycProvider {
  submit(request: KycStepRequest): Promise<void>;
}
