import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Job } from 'bullmq';
import { PinoLogger } from '../../../common/logging/pino-logger.js';
import { JobProcessor, type JobHandler } from '../../../common/queue/job-processor.js';
import { JOBS, QUEUES } from '../../../common/queue/queue-names.js';
import { QueueFactory } from '../../../common/queue/queue.factory.js';
import { APP_CONFIG, type AppConfig } from '../../../config/app-config.js';
import type { KycStep } from './entities/kyc-session.entity.js';
import type { KycProvider, KycStepRequest } from './kyc-provider.port.js';
import { KycSessionsService } from './kyc-sessions.service.js';

/** Documents whose name starts with this fail verification in the simulator (documented test input). */
export const SIMULATOR_FAIL_PREFIX = 'FAIL';

interface VerifyJob {
  sessionId: string;
  step: KycStep;
}

const jobId = (request: { sessionId: string; step: KycStep; submittedAt: Date }) =>
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

/**
 * Worker side of the simulator: decides each step (FAILED when its document's
 * name starts with FAIL; GOVERNMENTAL_CHECK_SELFIE looks at the SELFIE
 * document), and every 30 s resubmits steps whose job was lost.
 */
@Injectable()
@JobProcessor({ queue: QUEUES.kyc, concurrency: 10 })
export class KycSimulatorProcessor implements JobHandler, OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly sessions: KycSessionsService,
    private readonly provider: SimulatorKycProvider,
    private readonly queues: QueueFactory,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('KycSimulator');
  }

  async process(job: Job<VerifyJob>): Promise<string> {
    const found = await this.sessions.stepForVerification(job.data.sessionId, job.data.step);
    if (!found || found.step.status !== 'PENDING') return 'already decided';
    const name = found.document?.name ?? '';
    const failed = name.toUpperCase().startsWith(SIMULATOR_FAIL_PREFIX);
    await this.sessions.complete(
      job.data.sessionId,
      job.data.step,
      failed ? 'FAILED' : 'SUCCESS',
      failed ? 'the simulator rejects documents whose name starts with FAIL' : undefined,
    );
    return failed ? 'FAILED' : 'SUCCESS';
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.recover(), 30_000);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** Resubmits steps that waited far longer than the simulator takes and have no live job. */
  async recover(): Promise<number> {
    let resubmitted = 0;
    try {
      const overdue = await this.sessions.overdueSteps(
        new Date(Date.now() - this.config.kycSimDelayMs - 30_000),
      );
      const queue = this.queues.queue(QUEUES.kyc);
      for (const step of overdue) {
        const job = await queue.getJob(jobId(step));
        const state = job ? await job.getState() : 'missing';
        if (['waiting', 'delayed', 'active', 'prioritized'].includes(state)) continue;
        if (job) await job.remove().catch(() => undefined);
        await this.provider.submit(step);
        resubmitted++;
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'KYC recovery sweep failed; will try again');
    }
    return resubmitted;
  }
}
