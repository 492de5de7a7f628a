import { Inject, Injectable } from '@nestjs/common';
import type pg from 'pg';
import type { EntityManager } from 'typeorm';
import { PG_POOL } from '#common/database/pg-pool.js';
import { pgErrorOf } from '#common/database/sql.js';
import { toDb, type Money } from '#modules/wallet/money.js';
import {
  encodeTransferGroup,
  type EncodedReversalRequest,
  type EncodedTransferRequest,
  type ReversalResult,
  type TransferGroupResult,
} from './transfer-function.contract.js';
import type { TransferStatus } from './transfer-status.js';

/** Money in from the rail to one of this service's accounts, its ledger entry posted. */
export interface InboundDeposit {
  id: string;
  appId: string;
  accountId: string;
  counterpartyName: string;
  /** CUIT/CUIL digits only. */
  counterpartyTaxId: string;
  counterpartyIdentifierType: 'CBU' | 'CVU';
  counterpartyIdentifier: string;
  amount: Money;
  currency: string;
  concept: string;
}

/** One clearing step of an external transfer. */
export interface StatusMove {
  id: string;
  from: TransferStatus;
  to: TransferStatus;
  /** Given when the rail took the transfer (INICIADO → EN_CURSO). */
  clearingId?: string;
}

/**
 * The one writer of `transfers` and `transfer_status_history` (docs/decisions/0027-money-engine-layout.md):
 * no other TypeScript writes either table (src/modules/transfers/transfer-writer.spec.ts checks). A new
 * transfer is written by the database functions it calls (wallet_create_transfers,
 * src/modules/transfers/sql/); an inbound deposit and a clearing step are written here, in the caller's
 * transaction. The caller holds the rules: the checks, the locks, the ledger entry, the webhook.
 */
@Injectable()
export class TransferWriter {
  /**
   * The calls go straight to the pg pool under the DataSource as named statements: each connection parses and
   * plans them once (TypeORM's query API sends unnamed ones, planned on every call, and adds its own per-call
   * work; decision 0035).
   */
  constructor(@Inject(PG_POOL) private readonly pool: pg.Pool) {}

  /**
   * A group (one request or more) in one statement, one transaction: an answer per request, in order; a refusal
   * is returned, not raised.
   */
  createGroup(requests: readonly EncodedTransferRequest[]): Promise<TransferGroupResult[]> {
    return this.call<TransferGroupResult[]>('wallet_create_transfers', encodeTransferGroup(requests));
  }

  /**
   * A reversal or a return from the rail in one statement (autocommit), never grouped: wallet_reverse_transfer
   * locks the original pair and both ledger rows itself. A refusal is raised (SQLSTATE WT400/WT403/WT404).
   */
  reverse(request: EncodedReversalRequest): Promise<ReversalResult> {
    return this.call<ReversalResult>('wallet_reverse_transfer', request);
  }

  /** One money function's call as its named statement, retried on deadlock or serialization failure. */
  private async call<T>(fn: MoneyFunction, input: string): Promise<T> {
    const { rows } = await withRetries(() =>
      this.pool.query<{ result: T }>({
        name: fn,
        text: MONEY_CALLS[fn],
        values: [input],
      }),
    );
    return rows[0].result;
  }

  /**
   * An inbound DEPOSIT, ACREDITADO at once (EXTERNAL). Its creation (COMMITING → ACREDITADO) is implied by the
   * row (transfer_status_path, docs/decisions/0035-write-each-fact-once.md): no history row.
   */
  async recordInbound(manager: EntityManager, deposit: InboundDeposit): Promise<void> {
    await manager.query(
      `INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name,
         counterparty_tax_id, counterparty_identifier_type, counterparty_identifier, amount, currency, concept)
       VALUES ($1, $2, $3, 'DEPOSIT', 'ACREDITADO', 'EXTERNAL', $4, $5, $6, $7, $8, $9, $10)`,
      [
        deposit.id,
        deposit.appId,
        deposit.accountId,
        deposit.counterpartyName,
        deposit.counterpartyTaxId,
        deposit.counterpartyIdentifierType,
        deposit.counterpartyIdentifier,
        toDb(deposit.amount),
        deposit.currency,
        deposit.concept,
      ],
    );
  }

  /**
   * A transfer's new status (and clearing id, when given) with its history row. The caller holds the
   * transfer's row lock and checked that the move is allowed (canMove).
   */
  async moveStatus(manager: EntityManager, move: StatusMove): Promise<void> {
    if (move.clearingId === undefined) {
      await manager.query(`UPDATE transfers SET status = $2, updated_at = now() WHERE id = $1`, [
        move.id,
        move.to,
      ]);
    } else {
      await manager.query(
        `UPDATE transfers SET status = $2, clearing_id = $3, updated_at = now() WHERE id = $1`,
        [move.id, move.to, move.clearingId],
      );
    }
    await manager.query(
      `INSERT INTO transfer_status_history (transfer_id, from_status, to_status) VALUES ($1, $2, $3)`,
      [move.id, move.from, move.to],
    );
  }
}

/** The database functions TransferWriter calls (src/modules/transfers/sql/), each as its named statement. */
const MONEY_CALLS = {
  wallet_create_transfers: 'SELECT wallet_create_transfers($1::jsonb) AS result',
  wallet_reverse_transfer: 'SELECT wallet_reverse_transfer($1::jsonb) AS result',
} as const;
type MoneyFunction = keyof typeof MONEY_CALLS;

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
