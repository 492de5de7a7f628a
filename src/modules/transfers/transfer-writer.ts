import { Inject, Injectable } from '@nestjs/common';
import type pg from 'pg';
import type { EntityManager } from 'typeorm';
import { within } from '#common/async/within.js';
import { backendOf, endBackend, type Backend } from '#common/database/backend-identity.js';
import { PG_POOL } from '#common/database/pg-pool.js';
import { pgErrorOf } from '#common/database/sql.js';
import { isDependencyUnavailable } from '#common/errors/dependency-unavailable.js';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { toDb, type Money } from '#modules/wallet/money.js';
import {
  encodeTransferGroup,
  type EncodedReversalRequest,
  type EncodedTransferRequest,
  type ReversalResult,
  type ReversalViewRow,
  type TransferGroupResult,
} from './transfer-function.contract.js';
import type { TransferStatus } from './transfer-status.js';
import { counterpartyOwnerJoins, ROWS_BY_ID, type RowWithReversal } from './transfer-views.js';

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
  /** The tax the credit pays on what arrives (decision 0098); no fee: the account did not initiate it. */
  taxes: Money;
  currency: string;
  concept: string;
}

/**
 * A money call whose connection was lost after it may have reached the server, once its outcome is known: its
 * backend is gone (ended, so nothing more can commit) and `written` holds the rows found under the ids the call
 * was sent with (all of its new rows if it committed, none if it did not). `cause` is the connection's error, which
 * answers each request whose row is not there: nothing was written for it, and nothing will be (decision 0066).
 */
export class LostCall extends Error {
  constructor(
    readonly written: ReadonlyMap<string, RowWithReversal>,
    override readonly cause: unknown,
  ) {
    super('a money call lost its connection; what it wrote was read', { cause });
  }

  /**
   * The row written for one request of the call, as its answer, or undefined (the request answers `cause`). The
   * row is read after the call, so its account's owner may have changed since the call checked it (an account
   * moved to another owner commits right after, decision 0068): a user token's request whose row now names
   * another owner gets no row, never another user's name and tax id.
   */
  answerFor(id: string, subject: string | null): RowWithReversal | undefined {
    const row = this.written.get(id);
    return row && (subject === null || row.owner_id.toLowerCase() === subject.toLowerCase())
      ? row
      : undefined;
  }
}

/**
 * How long finding out what a lost call did may take: a connection from the pool, the old backend ended and
 * waited for, the rows read. Past it the outcome stays unknown and the call's requests answer 503.
 */
export const LOST_CALL_CHECK_MS = 5_000;

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
  constructor(
    @Inject(PG_POOL) private readonly pool: pg.Pool,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('TransferWriter');
  }

  /**
   * A group (one request or more) in one statement, one transaction: an answer per request, in order; a refusal
   * is returned, not raised. `ids` are the requests' ids (TransferRequest.id), in the same order. A call whose
   * connection was lost throws LostCall once its outcome is known, else the connection's error.
   */
  createGroup(
    requests: readonly EncodedTransferRequest[],
    ids: readonly string[],
  ): Promise<TransferGroupResult[]> {
    return this.call<TransferGroupResult[]>('wallet_create_transfers', encodeTransferGroup(requests), ids);
  }

  /**
   * A reversal or a return from the rail in one statement (autocommit), never grouped: wallet_reverse_transfer
   * locks the original pair and both ledger rows itself. A refusal is raised (SQLSTATE WT400/WT403/WT404). `id`
   * is the request's (ReversalRequest.id): a call whose connection was lost answers the row written under it, as
   * the call would have, or throws the connection's error when there is none (or its outcome cannot be known).
   */
  async reverse(
    request: EncodedReversalRequest,
    id: string,
    subject: string | null,
  ): Promise<ReversalResult> {
    try {
      return await this.call<ReversalResult>('wallet_reverse_transfer', request, [id]);
    } catch (error) {
      const row = error instanceof LostCall ? error.answerFor(id, subject) : undefined;
      if (row?.reversal_of) return { row: row as ReversalViewRow };
      throw error instanceof LostCall ? error.cause : error;
    }
  }

  /** One money function's call as its named statement, retried on deadlock or serialization failure. */
  private async call<T>(fn: MoneyFunction, input: string, ids: readonly string[]): Promise<T> {
    return withRetries(() => this.callOnce<T>(fn, input, ids));
  }

  /**
   * The call on a connection of the pool. A failure to get the connection means the call was never sent. A lost
   * connection while the call ran (isDependencyUnavailable) may have left it at the server, which may still commit
   * it at its Sync with no one to answer: its outcome is found out (whatWasWritten) and thrown as LostCall. Any
   * other error is the server's answer: the statement, its own transaction, was rolled back.
   */
  private async callOnce<T>(fn: MoneyFunction, input: string, ids: readonly string[]): Promise<T> {
    const client = await this.pool.connect();
    const backend = backendOf(client);
    let result: T;
    try {
      const { rows } = await client.query<{ result: T }>({
        name: fn,
        text: MONEY_CALLS[fn],
        values: [input],
      });
      result = rows[0].result;
    } catch (error) {
      const lost = isDependencyUnavailable(error);
      // The server's own answer at ERROR level (a refusal WT4xx, a deadlock retried, a statement timeout: a
      // SQLSTATE outside the connection classes) leaves the connection as good as before, back to the pool; any
      // other error takes it out, a FATAL or PANIC one too (the server closes the connection after it, perhaps
      // after the release). pool.query, used before, dropped it on every error: a refused reversal cost a new one.
      const { code, severity } = pgErrorOf(error);
      client.release(!lost && code !== undefined && severity === 'ERROR' ? undefined : true);
      if (!lost) throw error;
      const written = await this.whatWasWritten(backend, ids);
      this.logger.warn(
        { call: fn, requests: ids.length, written: written?.size ?? null },
        written
          ? 'a money call lost its connection; its backend was ended and what it wrote was read'
          : 'a money call lost its connection; what it wrote could not be found out',
      );
      throw written ? new LostCall(written, error) : error;
    }
    client.release();
    return result;
  }

  /**
   * What a call that lost its connection wrote, made final first: from another connection of the pool, its
   * backend (the pid and start recorded when the connection was made) is ended if it is still there and waited
   * for, so the call can no longer commit; then the rows under `ids` are read. Undefined when that cannot be done
   * within LOST_CALL_CHECK_MS (the database still out of reach, the backend still there) or the backend is not
   * known: then the call may yet commit, and its requests answer 503 (an Idempotency-Key covers that case).
   */
  private async whatWasWritten(
    backend: Backend | undefined,
    ids: readonly string[],
  ): Promise<Map<string, RowWithReversal> | undefined> {
    if (!backend) return undefined;
    const deadline = Date.now() + LOST_CALL_CHECK_MS;
    const client = await connectWithin(this.pool, LOST_CALL_CHECK_MS);
    if (!client) return undefined;
    try {
      const gone = await endBackend(client, backend, Math.max(1, deadline - Date.now()));
      const { rows } = await client.query<RowWithReversal>({
        text: ROWS_BY_ID,
        values: [ids],
        query_timeout: Math.max(1, deadline - Date.now()),
      } as pg.QueryConfig);
      client.release();
      // A row found is committed, and the call's transaction with it: what it wrote is final even if its backend
      // was still there. None found while the backend is still there: it may yet commit.
      if (!gone && rows.length === 0) return undefined;
      return new Map(rows.map((row) => [row.id, row]));
    } catch (error) {
      client.release(error instanceof Error ? error : true);
      return undefined;
    }
  }

  /**
   * An inbound DEPOSIT, ACREDITADO at once (EXTERNAL). Its creation (COMMITING → ACREDITADO) is implied by the
   * row (transfer_status_path, docs/decisions/0035-write-each-fact-once.md): no history row.
   */
  async recordInbound(manager: EntityManager, deposit: InboundDeposit): Promise<void> {
    await manager.query(
      `INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name,
         counterparty_tax_id, counterparty_identifier_type, counterparty_identifier, amount, currency, concept,
         taxes)
       VALUES ($1, $2, $3, 'DEPOSIT', 'ACREDITADO', 'EXTERNAL', $4, $5, $6, $7, $8, $9, $10, $11)`,
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
        toDb(deposit.taxes),
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

/**
 * The database functions TransferWriter calls (src/modules/transfers/sql/), each as its named statement.
 *
 * A reversal's answer also shows what the function does not answer (decision 0086): the type of the owner of the
 * row's counterparty account, and that owner's tax-id type, read by the account as TransferViews reads them. They
 * are read in the call's own statement and merged into its answer row (`row` or `replay`), so nothing is read
 * after the call commits: a read there that lost its connection answered 503 for a reversal that was written, and
 * a retry without a key reversed again (decision 0088). The read sees the owner as the statement's snapshot has it,
 * taken when the call began. A row without a counterparty account (a return's) gets nulls, which the views ignore.
 */
const MONEY_CALLS = {
  wallet_create_transfers: 'SELECT wallet_create_transfers($1::jsonb) AS result',
  wallet_reverse_transfer: `WITH called AS MATERIALIZED (SELECT wallet_reverse_transfer($1::jsonb) AS result),
         answer AS (SELECT result, CASE WHEN result ? 'row' THEN 'row' ELSE 'replay' END AS kind FROM called)
  SELECT jsonb_build_object(a.kind, (a.result -> a.kind) || jsonb_build_object(
           'counterparty_owner_type', cw.owner_type, 'counterparty_owner_tax_id_type', cu.tax_id_type)) AS result
    FROM answer a
    ${counterpartyOwnerJoins("(a.result -> a.kind ->> 'counterparty_account_id')::uuid")}`,
} as const;
type MoneyFunction = keyof typeof MONEY_CALLS;

/** A connection of the pool within `ms`, else undefined (one that comes later goes back to the pool). */
async function connectWithin(pool: pg.Pool, ms: number): Promise<pg.PoolClient | undefined> {
  const connecting = pool.connect();
  const outcome = await within(ms, () => connecting);
  if ('value' in outcome) return outcome.value;
  if ('lateAfterMs' in outcome)
    void connecting.then(
      (late) => late.release(),
      () => undefined,
    );
  return undefined;
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
