import type { KycStep } from './entities/kyc-session.entity.js';

/**
 * The KYC provider that verifies submitted steps. It answers asynchronously:
 * its verdict reaches KycSessionsService.complete. The default is the
 * simulator (kyc-simulator.ts), which runs through the job queue.
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
