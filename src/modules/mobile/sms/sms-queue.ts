import { Inject, Injectable } from '@nestjs/common';
import type { BackoffStrategy } from 'bullmq';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';

export interface SubmitSmsJob {
  messageId: string;
}

export interface SimulatedReceiptJob {
  providerMessageId: string;
  stat: string;
  err: string;
}

/** One job per message: adding it again while it is waiting or running is a no-op. */
export const submitJobId = (messageId: string) => `sms-${messageId}`;

/** Attempts of one submit job; past them the sweeper enqueues the still-QUEUED message again. */
const SUBMIT_ATTEMPTS = 1000;

/** The producer side of the `sms` queue (API and worker). */
@Injectable()
export class SmsQueue {
  constructor(
    private readonly queues: QueueFactory,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async enqueueSubmit(messageId: string): Promise<void> {
    await this.queues.queue(QUEUES.sms).add(JOBS.submitSms, { messageId } satisfies SubmitSmsJob, {
      jobId: submitJobId(messageId),
      attempts: SUBMIT_ATTEMPTS,
      backoff: { type: 'sms' },
    });
  }

  async enqueueSimulatedReceipt(receipt: SimulatedReceiptJob, delayMs: number): Promise<void> {
    await this.queues
      .queue(QUEUES.sms)
      .add(JOBS.simulatedSmsReceipt, receipt, { delay: delayMs, attempts: 5, backoff: { type: 'sms' } });
  }

  /** Retry delays while the provider cannot take messages: doubling from the SMPP reconnect minimum to its maximum. */
  backoff(): BackoffStrategy {
    const { reconnectMinMs, reconnectMaxMs } = this.config.mobile.smpp;
    return (attemptsMade: number) =>
      Math.min(reconnectMinMs * 2 ** Math.min(Math.max(attemptsMade - 1, 0), 30), reconnectMaxMs);
  }
}
