import { Injectable } from '@nestjs/common';
import type { Job, WorkerOptions } from 'bullmq';
import { JobProcessor, type JobHandler } from '#common/queue/job-processor.js';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import { SmsDispatchService, type DispatchOutcome } from './sms-dispatch.service.js';
import { SmsQueue, type SimulatedReceiptJob, type SubmitSmsJob } from './sms-queue.js';
import { SmsSimulatorProvider } from './sms-simulator.provider.js';

/**
 * Consumes the `sms` queue: submissions (retried with back-off while the
 * provider cannot take them) and the simulator's delayed receipts.
 */
@Injectable()
@JobProcessor({ queue: QUEUES.sms, concurrency: 20 })
export class SmsProcessor implements JobHandler {
  constructor(
    private readonly dispatch: SmsDispatchService,
    private readonly simulator: SmsSimulatorProvider,
    private readonly queue: SmsQueue,
  ) {}

  async process(job: Job): Promise<DispatchOutcome | 'reported' | 'ignored'> {
    if (job.name === JOBS.submitSms) return this.dispatch.submit((job.data as SubmitSmsJob).messageId);
    if (job.name === JOBS.simulatedSmsReceipt) {
      await this.simulator.report(job.data as SimulatedReceiptJob);
      return 'reported';
    }
    return 'ignored';
  }

  workerOptions(): Omit<WorkerOptions, 'connection'> {
    return { settings: { backoffStrategy: this.queue.backoff() } };
  }
}
