import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { UnrecoverableError, type Job } from 'bullmq';
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
import {
  ClearingService,
  IllegalClearingMove,
  RECOVERY_START,
  type RecoveryPosition,
  type SettlementOutcome,
} from './clearing.service.js';
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
 * none is settled twice (settle checks the status under the row lock). The
 * sweep claims each transfer with that row lock, skipping the ones another
 * worker holds, so workers share a round; one transfer that fails is logged
 * and passed over (docs/decisions/0061-clearing-sweep-robustness.md).
 */
@Injectable()
@JobProcessor({ queue: QUEUES.clearing, concurrency: 20 })
export class ClearingSimulatorProcessor implements JobHandler, OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  /** A round runs in this process: another (the timer's next tick) does not start beside it. */
  private sweeping = false;
  /** Where the last round stopped: the next goes on from there, and starts over once one found none left. */
  private position: RecoveryPosition = RECOVERY_START;

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
    const outcome = await this.outcomeFor(await this.clearing.identifierOf(transferId));
    try {
      if ((await this.clearing.settle(transferId, outcome)) === 'already final') {
        // A retried job, or the sweep came first: nothing to do.
        this.logger.debug({ transferId }, 'transfer already final; settle job did nothing');
        return 'already final';
      }
      return outcome;
    } catch (error) {
      if (!(error instanceof IllegalClearingMove)) throw error; // the database, the directory: retried
      this.logger.error(
        { transferId, from: error.from, to: error.to },
        'illegal clearing move: the settle job fails',
      );
      // Failed at once and kept in the queue's failed jobs: no retry can change the transfer's status.
      throw new UnrecoverableError(error.message);
    }
  }

  async outcomeFor(identifier: string | undefined): Promise<SettlementOutcome> {
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

  /**
   * Moves on what waited far longer than the simulator takes (no live job): one stalled transfer after another,
   * each claimed and settled in a short transaction of its own, until none is left or `limit` were handled.
   * A transfer whose step fails is logged (its id only) and passed over: the round goes on, and the next rounds
   * go on from where this one stopped, so a transfer that keeps failing is tried once per pass over the
   * stalled ones, never before all the others. Undefined when a round of this process is running already.
   */
  async recover(limit = RECOVERY_ROUND_LIMIT): Promise<RecoveryRound | undefined> {
    if (this.sweeping) return undefined;
    this.sweeping = true;
    const round: RecoveryRound = { settled: [], failed: [] };
    try {
      const olderThan = new Date(Date.now() - this.config.clearingSimDelayMs - 30_000);
      while (round.settled.length + round.failed.length < limit) {
        const step = await this.clearing.recoverNext(olderThan, this.position, (identifier) =>
          this.outcomeFor(identifier),
        );
        if (!step) {
          this.position = RECOVERY_START;
          break;
        }
        this.position = step.position;
        if (!('error' in step)) {
          round.settled.push(step.id);
          continue;
        }
        round.failed.push(step.id);
        this.logger.error(
          { transferId: step.id, err: step.error },
          'clearing recovery could not settle a stalled transfer; the round goes on without it',
        );
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'clearing recovery failed; will try again');
    } finally {
      this.sweeping = false;
    }
    if (round.settled.length > 0 || round.failed.length > 0)
      this.logger.info(
        { settled: round.settled.length, failed: round.failed.length },
        'clearing recovery settled stalled transfers',
      );
    return round;
  }
}

/**
 * The most transfers one round handles. A settlement took about 15 ms in the tests (two cores, every transfer on
 * one account), so a full round lasts a minute or so, the timer's ticks meanwhile skipped: ten pages of the old
 * 500 at a time. The bound makes a long backlog's round end now and then (its count logged, its cutoff renewed);
 * the next round goes on from where it stopped.
 */
export const RECOVERY_ROUND_LIMIT = 5_000;

/** The transfers a round settled, and those whose step failed (left in flight, logged). */
export interface RecoveryRound {
  settled: string[];
  failed: string[];
}
