import { Inject, Injectable } from '@nestjs/common';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import type { KycStep } from './entities/kyc-session.entity.js';
import type { KycProvider, KycStepRequest } from './kyc-provider.port.js';

/** A job of the `kyc` queue: one submitted step for the simulator to decide (KycSimulatorProcessor). */
export interface VerifyJob {
  sessionId: string;
  step: KycStep;
}

/** One job per submission of a step: a resubmission after a lost job gets a new id. */
export const jobId = (request: { sessionId: string; step: KycStep; submittedAt: Date }) =>
  `${request.sessionId}.${request.step}.${request.submittedAt.getTime()}`;

/** The default KYC provider: queues each submitted step for the simulated verification (KYC_SIM_DELAY_MS). */
@Injectable()
export class SimulatorKycProvider implements KycProvider {
  constructor(
    private readonly queues: QueueFactory,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async submit(request: KycStepRequest): Promise<void> {
    await this.queues
      .queue(QUEUES.kyc)
      .add(JOBS.verifyKycStep, { sessionId: request.sessionId, step: request.step } satisfies VerifyJob, {
        jobId: jobId(request),
        delay: this.config.kycSimDelayMs,
        attempts: 5,
        backoff: { type: 'exponential', delay: 1000 },
      });
  }
}
