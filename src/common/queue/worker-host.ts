import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { PinoLogger } from '../logging/pino-logger.js';
import { JOB_PROCESSOR_KEY, type JobHandler, type JobProcessorOptions } from './job-processor.js';
import type { QueueName } from './queue-names.js';
import { QueueFactory } from './queue.factory.js';

/**
 * How often, on average, a worker on Redis registers its recurring jobs again (decision 0090): a Redis that lost
 * them without the connection breaking (FLUSHALL) has them back within about this long. Each worker draws each
 * wait between half and one and a half of it, so that M workers do not write together.
 */
export const SCHEDULES_CHECK_MS = 5 * 60_000;
/** A shorter check period, provided by a global module (tests). */
export const SCHEDULES_CHECK_PERIOD = Symbol('SCHEDULES_CHECK_PERIOD');
/** After a reconnect (which all workers see together) each waits a random part of this before registering. */
export const RECONNECT_SPREAD_MS = 5_000;

/** Starts a BullMQ worker for every @JobProcessor provider of the worker module. */
@Injectable()
export class WorkerHost implements OnApplicationBootstrap, OnApplicationShutdown {
  private stopping = false;
  /** The processors with recurring jobs, and the queue each registers them on. */
  private readonly schedules: { queue: QueueName; handler: JobHandler }[] = [];
  /** The registration running, if any; a reason to register that comes meanwhile runs it once more after. */
  private registering?: Promise<void>;
  private again = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private unsubscribe?: () => void;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
    private readonly queues: QueueFactory,
    private readonly logger: PinoLogger,
    @Optional() @Inject(SCHEDULES_CHECK_PERIOD) private readonly checkMs: number = SCHEDULES_CHECK_MS,
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
      if (instance.schedule) this.schedules.push({ queue: options.queue, handler: instance });
      this.logger.info({ queue: options.queue, backend: this.queues.backend }, 'worker started');
    }
    // Recurring jobs are registered in the background: with Redis down at start, the registration waits for
    // it (the connection retries for ever) and must not hold the application's start, an API's HTTP above all.
    this.register();
    // On Redis they are registered again after each reconnect and now and then (decision 0090): a Redis restarted
    // without persistence, failed over to a replica that lagged, or flushed has lost them, and nothing else would
    // put them back before this process restarts. Registering again is BullMQ's upsert of the same scheduler id:
    // its next run stays where it was. The PostgreSQL backend keeps them in the database's own tables.
    if (this.queues.backend === 'redis' && this.schedules.length > 0) {
      this.unsubscribe = this.queues.onReconnect(() =>
        this.after(Math.random() * RECONNECT_SPREAD_MS, () => this.register()),
      );
      this.check();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await this.queues.closeWorkers();
  }

  /** Registers again after a random wait around the check period, and so on. */
  private check(): void {
    this.after(this.checkMs * (0.5 + Math.random()), () => {
      this.register();
      this.check();
    });
  }

  private after(ms: number, run: () => void): void {
    if (this.stopping) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.stopping) run();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  private register(): void {
    if (this.stopping) return;
    if (this.registering) {
      this.again = true;
      return;
    }
    this.again = false;
    this.registering = Promise.all(
      this.schedules.map(async ({ queue, handler }) => {
        try {
          await handler.schedule!(this.queues.queue(queue));
        } catch (error) {
          if (!this.stopping)
            this.logger.error(
              { queue, err: error },
              this.queues.backend === 'redis'
                ? 'recurring job not registered; the next check does'
                : 'recurring job not registered; the next start does',
            );
        }
      }),
    ).then(() => {
      this.registering = undefined;
      if (this.again) this.register();
    });
  }
}
