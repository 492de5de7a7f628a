import { Inject, Injectable } from '@nestjs/common';
import { MicroBatcher, type Settled } from '#common/database/micro-batcher.js';
import { MetricsRegistry } from '#common/metrics/metrics.registry.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { Gauge, Histogram } from 'prom-client';
import { refusalError } from './transfer-errors.js';
import type {
  EncodedTransferRequest,
  TransferGroupResult,
  TransferResult,
} from './transfer-function.contract.js';
import { LostCall, TransferWriter } from './transfer-writer.js';

interface Request {
  /** The function's input (transfer-function.contract.ts), already JSON. */
  input: EncodedTransferRequest;
  /** Its id (TransferRequest.id): the new transfer's, by which a lost call's outcome is looked up. */
  id: string;
  /** With a user token, that user (TransferRequest.subject): a lost call's row must still name them. */
  subject: string | null;
  /** The sender's account id. */
  accountId: string;
  /** The counterparty's CBU/CVU. */
  identifier: string;
  /** The accounts it touches, as far as known: requests sharing one are never in concurrent calls. */
  keys: readonly string[];
}

/** How many CVU → account id pairs the batcher remembers (a scheduling hint, bounded). */
const KNOWN_CVUS = 50_000;

/**
 * Group commit for transfer creation (docs/decisions/0015-money-path.md), on a MicroBatcher: a request goes to
 * the database at once when fewer than `concurrency` calls are in flight (so an idle service answers after one
 * call, no waiting); otherwise it waits, and the next free call takes the waiting requests, up to `max`, into
 * one transaction (wallet_create_transfers): one round trip and one WAL flush for all of them, each still checked
 * on its own. Requests that touch an account of a call in flight wait for the next call instead of a concurrent
 * one, so a hot account's requests queue into large groups rather than small calls waiting on each other's row
 * locks, while unrelated requests use the other calls. A refusal answers only its own request. A call whose
 * connection was lost is made final and read (TransferWriter, decision 0066): a request whose transfer was written
 * answers it as the call would have; the others answer the lost connection (503: nothing was written for them, nor
 * will be). When that cannot be found out, or the call failed otherwise, every request of the call answers the
 * failure.
 */
@Injectable()
export class TransferBatcher {
  private readonly batcher: MicroBatcher<Request, TransferResult>;
  /**
   * Our CVUs and their account ids, learnt from answers: a request names its sender by id and its counterparty
   * by CVU, and the two must compare equal for requests between the same accounts to be kept out of concurrent
   * calls. A CVU never changes owner; a stale or missing pair only costs a call that waits on row locks.
   */
  private readonly accountOfCvu = new Map<string, string>();

  constructor(
    private readonly writer: TransferWriter,
    @Inject(APP_CONFIG) config: AppConfig,
    metrics: MetricsRegistry,
  ) {
    const groupSize = new Histogram({
      name: 'transfer_group_size',
      help: 'Transfers written by one database call (group commit)',
      buckets: [1, 2, 4, 8, 16, 32, 60],
      registers: [metrics.registry],
    });
    const callDuration = new Histogram({
      name: 'transfer_call_duration_seconds',
      help: 'Duration of one group-commit database call, from sending to its answer',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [metrics.registry],
    });
    this.batcher = new MicroBatcher<Request, TransferResult>({
      ...config.transferBatch,
      keysOf: (request) => request.keys,
      onCall: (size) => groupSize.observe(size),
      run: async (requests) => {
        const end = callDuration.startTimer();
        try {
          return await this.run(requests);
        } finally {
          end();
        }
      },
    });
    const batcher = this.batcher;
    new Gauge({
      name: 'transfer_requests_waiting',
      help: 'Transfer requests waiting for a free database call',
      registers: [metrics.registry],
      collect() {
        this.set(batcher.load().waiting);
      },
    });
  }

  /** Requests queued, and calls and transfers at the database (for metrics and tests). */
  load(): { waiting: number; calls: number; transfers: number } {
    const { waiting, calls, items } = this.batcher.load();
    return { waiting, calls, transfers: items };
  }

  /** `id` and `subject` are the request's TransferRequest.id and .subject. */
  create(
    input: EncodedTransferRequest,
    { id, subject }: { id: string; subject: string | null },
    accountId: string,
    identifier: string,
  ): Promise<TransferResult> {
    const keys = [accountId, this.accountOfCvu.get(identifier) ?? identifier];
    return this.batcher.submit({ input, id, subject, accountId, identifier, keys });
  }

  private learn(request: Request, result: TransferResult): void {
    const row = 'replay' in result ? result.replay : result.row;
    if (row.cvu) this.remember(row.cvu, request.accountId);
    if (row.counterparty_account_id) this.remember(request.identifier, row.counterparty_account_id);
  }

  private remember(cvu: string, accountId: string): void {
    if (this.accountOfCvu.get(cvu) === accountId) return;
    this.accountOfCvu.delete(cvu);
    if (this.accountOfCvu.size >= KNOWN_CVUS) {
      this.accountOfCvu.delete(this.accountOfCvu.keys().next().value!);
    }
    this.accountOfCvu.set(cvu, accountId);
  }

  /**
   * A refusal comes back in the group's answer. A lost call whose outcome was read answers each request with its
   * transfer (an external one goes to the rail, as after a normal call) or the lost connection; anything else
   * thrown fails the whole call.
   */
  private async run(batch: Request[]): Promise<Settled<TransferResult>[]> {
    let results: TransferGroupResult[];
    try {
      results = await this.writer.createGroup(
        batch.map((request) => request.input),
        batch.map((request) => request.id),
      );
    } catch (error) {
      if (!(error instanceof LostCall)) throw error;
      return batch.map((request) => {
        const row = error.answerFor(request.id, request.subject);
        return row ? { value: { row, submit: row.route === 'EXTERNAL' } } : { error: error.cause };
      });
    }
    return results.map((result, n) => {
      if ('refused' in result) return { error: refusalError(result.refused) };
      this.learn(batch[n], result);
      return { value: result };
    });
  }
}
