import { SetMetadata } from '@nestjs/common';
import type { Job, WorkerOptions } from 'bullmq';
import type { QueueName } from './queue-names.js';
import type { AppQueue } from './queue.factory.js';

export const JOB_PROCESSOR_KEY = 'wallet:job-processor';

export interface JobProcessorOptions {
  queue: QueueName;
  concurrency?: number;
}

/**
 * Marks a provider as the consumer of a queue. Processors are provided only by
 * the worker module; the worker host discovers them and starts one BullMQ
 * worker each.
 */
export const JobProcessor = (options: JobProcessorOptions) => SetMetadata(JOB_PROCESSOR_KEY, options);

export interface JobHandler {
  process(job: Job): Promise<unknown>;
  /**
   * Registers repeatable jobs (job schedulers) once the worker starts, and again on Redis after a reconnect and
   * now and then (decision 0090): it must be idempotent (an upsert by a fixed id).
   */
  schedule?(queue: AppQueue): Promise<void>;
  workerOptions?(): Omit<WorkerOptions, 'connection'>;
}
