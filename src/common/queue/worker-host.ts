import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { PinoLogger } from '../logging/pino-logger.js';
import { JOB_PROCESSOR_KEY, type JobHandler, type JobProcessorOptions } from './job-processor.js';
import { QueueFactory } from './queue.factory.js';

/** Starts a BullMQ worker for every @JobProcessor provider of the worker module. */
@Injectable()
export class WorkerHost implements OnApplicationBootstrap, OnApplicationShutdown {
  private stopping = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
    private readonly queues: QueueFactory,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('WorkerHost');
  }

  onApplicationBootstrap(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as JobHandler | undefined;
      if (!instance || !wrapper.metatype) continue;
      const options = this.reflector.get<JobProcessorOptions | undefined>(
        JOB_PROCESSOR_KEY,
        wrapper.metatype as new (...args: never[]) => unknown,
      );
      if (!options) continue;
      const worker = this.queues.worker(options.queue, (job) => instance.process(job), {
        concurrency: options.concurrency ?? 1,
        ...instance.workerOptions?.(),
      });
      worker.on('failed', (job, error) =>
        this.logger.warn({ queue: options.queue, jobId: job?.id, err: error }, 'job failed'),
      );
      worker.on('error', (error) =>
        this.queues.errors.report(`worker:${options.queue}`, (fields) =>
          this.logger.error({ queue: options.queue, err: error, ...fields }, 'worker error'),
        ),
      );
      // Recurring jobs are registered in the background: with Redis down at start, the registration waits for
      // it (the connection retries for ever) and must not hold the application's start, an API's HTTP above all.
      instance.schedule?.(this.queues.queue(options.queue)).catch((error: unknown) => {
        if (!this.stopping)
          this.logger.error(
            { queue: options.queue, err: error },
            'recurring job not registered; the next start does',
          );
      });
      this.logger.info({ queue: options.queue, backend: this.queues.backend }, 'worker started');
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.queues.closeWorkers();
  }
}
