import { Injectable } from '@nestjs/common';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';
import type { ClearingRail } from './clearing-rail.port.js';

/** Options of the simulator's present and settle jobs. */
export const CLEARING_JOB_OPTIONS = {
  removeOnComplete: true,
  attempts: 5,
  backoff: { type: 'exponential' as const, delay: 1000 },
};

/**
 * The default rail: presents each external transfer at once and settles it after CLEARING_SIM_DELAY_MS (the
 * steps run in ClearingSimulatorProcessor, on the worker side).
 */
@Injectable()
export class SimulatorRail implements ClearingRail {
  constructor(private readonly queues: QueueFactory) {}

  async submit(transferId: string): Promise<void> {
    await this.queues
      .queue(QUEUES.clearing)
      .add(JOBS.presentTransfer, { transferId }, { ...CLEARING_JOB_OPTIONS, jobId: `${transferId}.present` });
  }
}
