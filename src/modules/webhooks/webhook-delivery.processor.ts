import { Injectable } from '@nestjs/common';
import type { Job } from 'bullmq';
import { JobProcessor, type JobHandler } from '#common/queue/job-processor.js';
import { QUEUES } from '#common/queue/queue-names.js';
import { WebhookDeliveryService } from './webhook-delivery.service.js';

/**
 * Consumes delivery jobs. Retries are scheduled by the delivery service in the database, not by BullMQ.
 * 200 at a time: a job spends most of its life waiting (for its claim's and its record's batch, for the
 * receiver), and the batches grow with the jobs waiting for them.
 */
@Injectable()
@JobProcessor({ queue: QUEUES.webhooks, concurrency: 200 })
export class WebhookDeliveryProcessor implements JobHandler {
  constructor(private readonly delivery: WebhookDeliveryService) {}

  process(job: Job<{ eventId: string } | { events: string[] }>): Promise<unknown> {
    if ('events' in job.data) return this.delivery.deliverAll(job.data.events);
    return this.delivery.deliver(job.data.eventId);
  }
}
