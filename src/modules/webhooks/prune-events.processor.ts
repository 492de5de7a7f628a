import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Job } from 'bullmq';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { deleteInBatches } from '#common/database/batched-delete.js';
import { JobProcessor, type JobHandler } from '#common/queue/job-processor.js';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import type { AppQueue } from '#common/queue/queue.factory.js';

/** Deleted per statement, so one run never holds a long transaction over the outbox. */
const BATCH = 5_000;

/**
 * Forgets events older than EVENTS_RETENTION_DAYS that are no longer pending (delivered or failed), with
 * their attempts (ON DELETE CASCADE). A pending event stays whatever its age: the feed and delivery need it.
 * A run that fails part way fails its job with a BatchedDeleteError, whose message (the worker's "job failed"
 * line, the job's failedReason) says how many events it deleted before (decision 0078).
 */
@Injectable()
@JobProcessor({ queue: QUEUES.events })
export class PruneEventsProcessor implements JobHandler {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async process(job: Job): Promise<{ deleted: number }> {
    if (job.name !== JOBS.pruneEvents) return { deleted: 0 };
    return { deleted: await this.prune() };
  }

  async prune(retentionDays = this.config.eventsRetentionDays, batch = BATCH): Promise<number> {
    const { deleted } = await deleteInBatches(this.dataSource, {
      table: 'webhook_events',
      key: 'id',
      where: `created_at < now() - ($1::int * interval '1 day') AND status <> 'pending'`,
      params: [retentionDays],
      batch,
    });
    return deleted;
  }

  async schedule(queue: AppQueue): Promise<void> {
    await queue.upsertJobScheduler(JOBS.pruneEvents, { every: 3_600_000 }, { name: JOBS.pruneEvents });
  }
}
