import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Job } from 'bullmq';
import { DataSource, LessThan } from 'typeorm';
import { JobProcessor, type JobHandler } from '#common/queue/job-processor.js';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import type { AppQueue } from '#common/queue/queue.factory.js';
import { UsedAssertionEntity } from './entities/used-assertion.entity.js';

/** Forgets client-assertion ids once their assertion has expired (they can no longer be replayed). */
@Injectable()
@JobProcessor({ queue: QUEUES.maintenance })
export class PruneUsedAssertionsProcessor implements JobHandler {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async process(job: Job): Promise<{ deleted: number }> {
    if (job.name !== JOBS.pruneUsedAssertions) return { deleted: 0 };
    const result = await this.dataSource
      .getRepository(UsedAssertionEntity)
      .delete({ expiresAt: LessThan(new Date()) });
    return { deleted: result.affected ?? 0 };
  }

  async schedule(queue: AppQueue): Promise<void> {
    await queue.upsertJobScheduler(
      JOBS.pruneUsedAssertions,
      { every: 10 * 60_000 },
      { name: JOBS.pruneUsedAssertions },
    );
  }
}
