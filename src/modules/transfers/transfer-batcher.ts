import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import {
  ForbiddenError,
  ValidationFailedError,
  type ForbiddenReason,
  type ValidationItemType,
} from '../../common/errors/domain-errors.js';
import { pgErrorOf } from '../../common/database/sql.js';
import { MetricsRegistry } from '../../common/metrics/metrics.js';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { Gauge, Histogram } from 'prom-client';
import type { TransferViewRow } from './transfer-views.js';

/** What wallet_create_transfer answers: a replayed key's stored row, or the new transfer's row. */
export type CreateResult = { replay: TransferViewRow } | { row: TransferViewRow; submit: boolean };

interface Refusal {
  code: string;
  path: string;
  type: string;
  message: string;
}

interface Pending {
  /** The function's input, already JSON. */
  input: string;
  resolve: (result: CreateResult) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for transfer creation (docs/decisions/0015-money-path.md). A request goes to the database at
 * once when fewer than `concurrency` calls are in flight (so an idle service answers after one call, no
 * waiting); otherwise it waits, and the next free call takes every waiting request, up to `max`, into one
 * transaction (wallet_create_transfers): one round trip and one WAL flush for all of them, each still checked
 * on its own. A refusal answers only its own request; a failure of the whole call (a lost connection) answers
 * every request of that call with it, and nothing of that call was written unless it committed.
 */
@Injectable()
export class TransferBatcher {
  private readonly waiting: Pending[] = [];
  private inFlight = 0;
  private inFlightTransfers = 0;
  private readonly groupSize: Histogram;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    metrics: MetricsRegistry,
  ) {
    this.groupSize = new Histogram({
      name: 'transfer_group_size',
      help: 'Transfers written by one database call (group commit)',
      buckets: [1, 2, 4, 8, 16, 32, 60],
      registers: [metrics.registry],
    });
    const waiting = this.waiting;
    new Gauge({
      name: 'transfer_requests_waiting',
      help: 'Transfer requests waiting for a free database call',
      registers: [metrics.registry],
      collect() {
        this.set(waiting.length);
      },
    });
  }

  /** Requests queued, and calls and transfers at the database (for metrics and tests). */
  load(): { waiting: number; calls: number; transfers: number } {
    return { waiting: this.waiting.length, calls: this.inFlight, transfers: this.inFlightTransfers };
  }

  create(input: string): Promise<CreateResult> {
    return new Promise<CreateResult>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    const { max, concurrency } = this.config.transferBatch;
    while (this.inFlight < concurrency && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, max);
      this.inFlight++;
      this.inFlightTransfers += batch.length;
      this.groupSize.observe(batch.length);
      void this.run(batch).finally(() => {
        this.inFlight--;
        this.inFlightTransfers -= batch.length;
        this.dispatch();
      });
    }
  }

  private async run(batch: Pending[]): Promise<void> {
    try {
      if (batch.length === 1) {
        const [row] = (await withRetries(() =>
          this.dataSource.query(`SELECT wallet_create_transfer($1::jsonb) AS result`, [batch[0].input]),
        )) as { result: CreateResult }[];
        batch[0].resolve(row.result);
        return;
      }
      const [row] = (await withRetries(() =>
        this.dataSource.query(`SELECT wallet_create_transfers($1::jsonb) AS results`, [
          `[${batch.map((pending) => pending.input).join(',')}]`,
        ]),
      )) as { results: (CreateResult | { refused: Refusal })[] }[];
      row.results.forEach((result, n) => {
        if ('refused' in result) batch[n].reject(refusalError(result.refused));
        else batch[n].resolve(result);
      });
    } catch (error) {
      const refused = refusalOf(error);
      for (const pending of batch) pending.reject(refused ?? error);
    }
  }
}

/** Deadlocks and serialization failures are retried here (the whole call rolled back), never shown to the client. */
async function withRetries<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const code = pgErrorOf(error).code;
      if ((code === '40P01' || code === '40001') && attempt < 5) continue;
      throw error;
    }
  }
}

/**
 * A refusal raised by the database functions (migrations/1763900700000-TransferFunction.ts) as the domain
 * error it stands for: SQLSTATE WT400 → 400 at DETAIL (the path) of type HINT; WT403 → 403 with reason HINT.
 */
export function refusalOf(error: unknown): Error | undefined {
  const driver = pgErrorOf(error);
  if (driver.code !== 'WT400' && driver.code !== 'WT403') return undefined;
  return refusalError({
    code: driver.code,
    path: driver.detail ?? '',
    type: driver.hint ?? 'invalid',
    message: driver.message ?? 'refused',
  });
}

function refusalError(refusal: Refusal): Error {
  if (refusal.code === 'WT403') return new ForbiddenError(refusal.type as ForbiddenReason, refusal.message);
  return ValidationFailedError.single(refusal.path, refusal.type as ValidationItemType, refusal.message);
}
