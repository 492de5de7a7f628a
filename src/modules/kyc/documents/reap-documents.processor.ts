import { Inject, Injectable } from '@nestjs/common';
import type { Job } from 'bullmq';
import { JobProcessor, type JobHandler } from '#common/queue/job-processor.js';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import type { AppQueue } from '#common/queue/queue.factory.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { DocumentReaper } from './document-reaper.js';

/**
 * Every DOCUMENT_REAPER_INTERVAL_HOURS (a job scheduler with a fixed id: one run per period however many
 * workers), removes stored document bytes that no row names and that are older than the grace period. With 0 the
 * scheduler is removed and a job already queued does nothing.
 */
@Injectable()
@JobProcessor({ queue: QUEUES.documents })
export class ReapDocumentsProcessor implements JobHandler {
  constructor(
    private readonly reaper: DocumentReaper,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async process(
    job: Job,
  ): Promise<{ orphans: number; held: boolean; removed: number; failed: number } | undefined> {
    if (job.name !== JOBS.reapDocuments || this.config.documentReaperIntervalHours === 0) return undefined;
    const report = await this.reaper.reap();
    // Counts only: a job's answer is kept in the queue; the keys are in the log.
    return {
      orphans: report.orphans.length,
      held: report.held,
      removed: report.removed,
      failed: report.failed.length,
    };
  }

  async schedule(queue: AppQueue): Promise<void> {
    const hours = this.config.documentReaperIntervalHours;
    if (hours === 0) {
      await queue.removeJobScheduler(JOBS.reapDocuments);
      return;
    }
    await queue.upsertJobScheduler(
      JOBS.reapDocuments,
      { every: hours * 3_600_000 },
      { name: JOBS.reapDocuments },
    );
  }
}
