import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Job } from 'bullmq';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { JobProcessor, type JobHandler } from '#common/queue/job-processor.js';
import { JOBS, QUEUES } from '#common/queue/queue-names.js';
import { QueueFactory } from '#common/queue/queue.factory.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { isCvu, isValidCbu } from '#modules/wallet/cvu.js';
import {
  COUNTERPARTY_DIRECTORY,
  type CounterpartyDirectory,
} from '../counterparty/counterparty-directory.port.js';
import { ClearingService, type SettlementOutcome } from './clearing.service.js';
import { CLEARING_JOB_OPTIONS } from './simulator-rail.js';

/**
 * Worker side of the simulator. Any CBU/CVU with valid check digits settles
 * ACREDITADO, as a real rail would carry it, except the documented test
 * accounts of the counterparty directory (listed with `simulate`: that failure
 * status) and a CVU of this service's own PSP (CVU_PSP_CODE): it routed
 * external because no live account here has it, so the rail would bring it
 * back to no one (ERROR_DATOS). Every 30 s a recovery
 * sweep moves on external transfers that stayed in flight far longer than the
 * simulated delay (a lost job, a worker restart): none stays pending forever,
 * none is settled twice (settle checks the status under the row lock).
 */
@Injectable()
@JobProcessor({ queue: QUEUES.clearing, concurrency: 20 })
export class ClearingSimulatorProcessor implements JobHandler, OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly clearing: ClearingService,
    private readonly queues: QueueFactory,
    @Inject(COUNTERPARTY_DIRECTORY) private readonly directory: CounterpartyDirectory,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('ClearingSimulator');
  }

  async process(job: Job<{ transferId: string }>): Promise<string> {
    const { transferId } = job.data;
    if (job.name === JOBS.presentTransfer) {
      await this.clearing.present(transferId);
      await this.queues
        .queue(QUEUES.clearing)
        .add(
          JOBS.settleTransfer,
          { transferId },
          { ...CLEARING_JOB_OPTIONS, jobId: `${transferId}.settle`, delay: this.config.clearingSimDelayMs },
        );
      return 'presented';
    }
    const outcome = await this.outcomeFor(transferId);
    const settled = await this.clearing.settle(transferId, outcome);
    return settled ? outcome : 'already settled';
  }

  async outcomeFor(transferId: string): Promise<SettlementOutcome> {
    const identifier = await this.clearing.identifierOf(transferId);
    if (!identifier || !isValidCbu(identifier)) return 'ERROR_DATOS';
    if (isCvu(identifier) && identifier.slice(3, 7) === this.config.cvuPspCode) return 'ERROR_DATOS';
    const testAccount = await this.directory.byNumber(identifier);
    return testAccount?.simulate ?? 'ACREDITADO';
  }

  onApplicationBootstrap(): void {
    // After a restart, what was in flight moves on at once; then every 30 s.
    void this.recover();
    this.timer = setInterval(() => void this.recover(), 30_000);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** Moves on what waited far longer than the simulator takes (no live job). */
  async recover(): Promise<number> {
    let moved = 0;
    try {
      const stalled = await this.clearing.stalled(
        new Date(Date.now() - this.config.clearingSimDelayMs - 30_000),
      );
      for (const transfer of stalled) {
        if (transfer.status === 'INICIADO') await this.clearing.present(transfer.id);
        if (await this.clearing.settle(transfer.id, await this.outcomeFor(transfer.id))) moved++;
      }
      if (moved > 0) this.logger.info({ moved }, 'clearing recovery settled stalled transfers');
    } catch (error) {
      this.logger.warn({ err: error }, 'clearing recovery failed; will try again');
    }
    return moved;
  }
}
