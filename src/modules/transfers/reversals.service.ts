import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type pg from 'pg';
import { DataSource } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { tryAgain } from '#common/async/try-again.js';
import { PG_POOL } from '#common/database/pg-pool.js';
import { isDependencyUnavailable } from '#common/errors/dependency-unavailable.js';
import { NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { uuidv7 } from '#common/ids/uuid-v7.js';
import { type AuditActor, requestActor } from '#modules/audit/audit-trail.js';
import { boundedAmount, fromDb, MINOR_UNITS, Money, toDb, toJson } from '#modules/wallet/money.js';
import type { CreateReversalDto, ReversalInfoDto, ReversalsSummaryDto } from './dto/reversal.dto.js';
import { refusalOf } from './transfer-errors.js';
import { encodeReversalRequest, type ReversalRequest } from './transfer-function.contract.js';
import { reversalView, TransferViews } from './transfer-views.js';
import { TransferWriter } from './transfer-writer.js';
import { hashOf, requestHash } from './request-hash.js';
import { checkIdempotencyKey } from '#common/http/idempotency-key.js';

/** A return from the rail, as the CLI prints it. */
export interface RailReturn {
  transferId: string;
  /** The WITHDRAW's account: the DEPOSIT is its row, also when the money went to UNCLAIMED_RETURNS. */
  accountId: string;
  returnOf: string;
  amount: number;
  status: 'ACREDITADO';
  /**
   * Where the money went: the account, or, when the account was closed, the system account UNCLAIMED_RETURNS,
   * until an operator pays it out (`transfers unclaimed`, `transfers pay-out`; decision 0062).
   */
  creditedTo: 'ACCOUNT' | 'UNCLAIMED_RETURNS';
}

/**
 * The pauses before each new try of a booked return's follow-up read whose connection was lost (decision 0082):
 * about 4 s in all, a failover's or a dropped connection's time.
 */
const BOOKED_READ_DELAYS_MS = [100, 250, 500, 1_000, 2_000];

/**
 * Money back along a settled transfer (docs/decisions/0031-reversals.md): a reversal of an internal transfer by
 * the application of the account that received it, and the rail's return of an external WITHDRAW. Both are one
 * call of wallet_reverse_transfer (sql/wallet_reverse_transfer.sql), outside the transfer batcher: the function
 * locks the original pair and both ledger rows and checks everything before it writes.
 */
@Injectable()
export class ReversalsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(PG_POOL) private readonly pool: pg.Pool,
    private readonly writer: TransferWriter,
    private readonly views: TransferViews,
  ) {}

  async reverse(
    principal: Principal,
    transferId: string,
    input: CreateReversalDto,
    idempotencyKey: string | undefined,
  ): Promise<ReversalInfoDto> {
    checkIdempotencyKey(idempotencyKey);
    const id = transferId.toLowerCase();
    const audit = requestActor(principal);
    const request: ReversalRequest = {
      kind: 'reversal',
      id: uuidv7(),
      appId: principal.appId,
      subject: principal.kind === 'subject' ? principal.subject : null,
      transferId: id,
      amount: input.amount === undefined ? null : toDb(this.amountOf(input.amount)),
      reason: input.reason,
      actor: audit.actor,
      auditActor: audit.actor,
      requestId: audit.requestId,
      route: audit.action,
      minorUnits: MINOR_UNITS,
      idempotencyKey: idempotencyKey === undefined ? null : `reversal ${idempotencyKey}`,
      requestHash: idempotencyKey === undefined ? null : requestHash(principal, { uuid: id, body: input }),
    };
    // The answer row carries all the view needs (TransferWriter reads the counterparty's owner in the call's own
    // statement): nothing is read after the commit, so nothing can fail the request once it is written.
    const result = await this.call(request);
    return reversalView('replay' in result ? result.replay : result.row);
  }

  /**
   * The rail gives back (part of) an external WITHDRAW that was ACREDITADO: a DEPOSIT on the sender's account
   * from SETTLEMENT, linked as its reversal (the same cumulative rule), announced with transfer_update. The rail
   * has paid, so the account's state refuses nothing: a closed account's money goes to UNCLAIMED_RETURNS, any
   * other account is credited (decision 0062).
   * With the rail's reference, the function claims `return <reference>` in idempotency_keys (the WITHDRAW's
   * application) in the return's transaction: the same reference, transfer and amount again answer the first
   * return, even once its account is closed; with another transfer or amount it is refused at `reference`.
   */
  async returnFromRail(
    input: {
      transferId: string;
      amount?: string;
      reason: string;
      /** The rail's own id of the return: a second return with it answers the first (24 to 48 hours). */
      reference?: string;
    },
    actor: AuditActor,
  ): Promise<RailReturn> {
    const transferId = input.transferId.toLowerCase();
    const amount =
      input.amount === undefined ? null : toDb(this.amountOf(Number(input.amount), input.amount));
    const result = await this.call({
      kind: 'return',
      id: uuidv7(),
      appId: null,
      subject: null,
      transferId,
      amount,
      reason: input.reason,
      actor: 'system:clearing-return',
      auditActor: actor.actor,
      requestId: actor.requestId,
      route: actor.action,
      minorUnits: MINOR_UNITS,
      idempotencyKey: input.reference === undefined ? null : `return ${input.reference}`,
      // What the money depends on (as an inbound credit's hash): the reason is a description, left out.
      requestHash: input.reference === undefined ? null : hashOf({ transferId, amount }),
    });
    const row = 'replay' in result ? result.replay : result.row;
    const booked = await this.whereItWent(row.id);
    return {
      transferId: row.id,
      accountId: booked.account_id,
      returnOf: row.reversal_of,
      amount: toJson(row.amount),
      status: 'ACREDITADO',
      creditedTo: booked.unclaimed ? 'UNCLAIMED_RETURNS' : 'ACCOUNT',
    };
  }

  /**
   * The account of a booked return (the WITHDRAW's) and whether its money went to UNCLAIMED_RETURNS, read after
   * the call committed it. A lost connection here must not fail the command: run again without --reference, it
   * would book a second return. The read changes nothing, so it is tried again on a connection-class error, each
   * time on a new connection (pool.query drops a connection that failed), after BOOKED_READ_DELAYS_MS. A database
   * out of reach for longer still fails the command, with a message that names the booked return.
   */
  private async whereItWent(id: string): Promise<{ account_id: string; unclaimed: boolean }> {
    const read = async () =>
      (
        await this.pool.query<{ account_id: string; unclaimed: boolean }>(
          `SELECT t.account_id, u.transfer_id IS NOT NULL AS unclaimed
             FROM transfers t LEFT JOIN unclaimed_returns u ON u.transfer_id = t.id WHERE t.id = $1`,
          [id],
        )
      ).rows[0];
    return tryAgain(read, BOOKED_READ_DELAYS_MS, (error) => isDependencyUnavailable(error)).catch(
      (error: unknown) => {
        if (!isDependencyUnavailable(error)) throw error;
        throw new Error(
          `the return ${id} was booked, but the database was lost before its account could be read: do not run the command again (audit list --resource ${id})`,
          { cause: error },
        );
      },
    );
  }

  /** What was given back for the transfer `id` (either row the caller sees), and what is left. */
  async summary(principal: Principal, id: string): Promise<ReversalsSummaryDto> {
    const found = await this.views.withReversals(this.dataSource.manager, principal, id.toLowerCase());
    if (!found) throw new NotFoundError(id, 'Transfer not found');
    const { original, reversals } = found;
    const reversed = reversals.reduce((sum, row) => sum.plus(fromDb(row.amount)), new Money(0));
    const reversible =
      original.status === 'ACREDITADO' &&
      original.reversal_of === null &&
      (original.route === 'INTERNAL' || original.movement_type === 'WITHDRAW');
    const amount = fromDb(original.amount);
    return {
      uuid: original.id,
      amount: toJson(original.amount),
      currency: original.currency,
      reversed: toJson(reversed),
      left: reversible ? toJson(amount.minus(reversed)) : 0,
      reversals: reversals.map(reversalView),
    };
  }

  /** The amount as the client wrote it (never a float compare), within MAX_AMOUNT. */
  private amountOf(value: number, text = String(value)): Money {
    if (!Number.isFinite(value))
      throw ValidationFailedError.single('amount', 'invalid', 'amount is not a number');
    return boundedAmount(text, 'amount');
  }

  private async call(request: ReversalRequest) {
    return this.writer
      .reverse(encodeReversalRequest(request), request.id, request.subject)
      .catch((error: unknown) => {
        throw refusalOf(error) ?? error;
      });
  }
}
