import { Injectable } from '@nestjs/common';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';
import type { ClearingRail } from './clearing-rail.port.js';

/**
 * Options of the simulator's present and settle jobs. A step fails while the database is out of reach (a
 * failover, a restart), and BullMQ tries it again after 1, 2, 4 … 64 s: eight attempts, about two minutes
 * (127 s; at least 101 s with the jitter, which spreads the jobs that failed together so that they do not all
 * come back in the same second). A failover of a minute is ridden out with room to spare, and a blip costs a
 * second. Past that, the recovery sweep moves the transfer on (docs/decisions/0061-clearing-sweep-robustness.md).
 */
export const CLEARING_JOB_OPTIONS = {
  removeOnComplete: true,
  attempts: 8,
  backoff: { type: 'exponential' as const, delay: 1000, jitter: 0.2 },
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
