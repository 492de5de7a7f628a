import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { WEBHOOK_EVENTS } from '#modules/webhooks/webhook-events.js';
import { WebhooksService } from '#modules/webhooks/webhooks.service.js';
import { AccountLimitsService } from '#modules/wallet/accounts/account-limits.service.js';
import { LedgerService } from '#modules/wallet/ledger/ledger.service.js';
import { fromDb } from '#modules/wallet/money.js';
import {
  canMove,
  FAILURE_STATUSES,
  isFinal,
  webhookStatus,
  type TransferStatus,
} from '../transfer-status.js';
import { TransferWriter } from '../transfer-writer.js';
import { auditAppend, systemActor } from '#modules/audit/audit-trail.js';

export type SettlementOutcome = 'ACREDITADO' | 'ERROR_DATOS' | 'SIN_GARANTIA' | 'ERROR_ACREDITACION';

/** What `settle` did: moved the transfer to its final status, or nothing (it was final already). */
export type SettleResult = 'settled' | 'already final';

/**
 * A verdict the transfer cannot take: no external transfer has the id, or its status does not lead there (a
 * COMMITING row, a status that is not a clearing outcome). A bug or bad data, never a race: retrying cannot help.
 */
export class IllegalClearingMove extends Error {
  constructor(
    readonly transferId: string,
    readonly from: TransferStatus | undefined,
    readonly to: string,
  ) {
    super(
      from === undefined
        ? `no external transfer ${transferId} to settle`
        : `transfer ${transferId} cannot move from ${from} to ${to}`,
    );
    this.name = 'IllegalClearingMove';
  }
}

/** Where a recovery sweep stands in the stalled transfers, in (updated_at, id) order. */
export interface RecoveryPosition {
  /** updated_at as PostgreSQL writes it (microseconds kept: a JavaScript Date would drop them). */
  at: string;
  id: string;
}

/** Before every stalled transfer. */
export const RECOVERY_START: RecoveryPosition = {
  at: '-infinity',
  id: '00000000-0000-0000-0000-000000000000',
};

/** One stalled transfer a sweep claimed: settled, or `error` when its step failed (rolled back). */
export interface RecoveryStep {
  id: string;
  position: RecoveryPosition;
  error?: unknown;
}

interface LockedTransfer {
  id: string;
  app_id: string;
  account_id: string;
  movement_type: 'DEPOSIT' | 'WITHDRAW';
  status: TransferStatus;
  amount: string;
  fees: string;
  taxes: string;
  currency: string;
  counterparty_identifier: string;
}

/** What a clearing step reads of the transfer it locks. */
const LOCKED_COLUMNS = `id, app_id, account_id, movement_type, status, amount::text AS amount, fees::text AS fees,
       taxes::text AS taxes, currency, counterparty_identifier`;

/** The verdicts a rail gives: the final statuses. */
const SETTLEMENT_OUTCOMES: readonly string[] = ['ACREDITADO', ...FAILURE_STATUSES];

/**
 * Moves external transfers through the clearing states and posts the money:
 * a WITHDRAW's hold is captured (to settlement, fee revenue, tax) or released
 * back to the account; a DEPOSIT is credited only when the rail confirms.
 * Every step locks the transfer row first and checks its status, so a step
 * that runs twice (a retried job, the recovery sweep) does nothing the second time.
 */
@Injectable()
export class ClearingService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly ledger: LedgerService,
    private readonly webhooks: WebhooksService,
    private readonly limits: AccountLimitsService,
    private readonly writer: TransferWriter,
  ) {}

  /** INICIADO → EN_CURSO: the rail has the transfer (it gets its clearing id). */
  async present(transferId: string): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const transfer = await this.lock(manager, transferId);
      if (!transfer || transfer.status !== 'INICIADO') return false;
      await this.presentLocked(manager, transfer);
      return true;
    });
  }

  /**
   * The rail's verdict: a final status, with its money movement and a transfer_update webhook. A transfer that is
   * final already is left as it is ('already final': a retried job, or the sweep came first); a verdict it
   * cannot take throws IllegalClearingMove.
   */
  async settle(transferId: string, outcome: SettlementOutcome): Promise<SettleResult> {
    return this.dataSource.transaction(async (manager) => {
      const transfer = await this.lock(manager, transferId);
      if (transfer && isFinal(transfer.status)) return 'already final';
      if (!transfer) throw new IllegalClearingMove(transferId, undefined, outcome);
      await this.settleLocked(manager, transfer, outcome);
      return 'settled';
    });
  }

  /**
   * The recovery sweep's step: claims the first stalled external transfer after `after` (in flight since before
   * `olderThan`, in (updated_at, id) order) that no other transaction holds, and presents and settles it in the
   * claim's transaction, with the verdict `outcomeFor` gives for its counterparty. The claim is the row lock that
   * settling takes anyway (FOR UPDATE SKIP LOCKED): sweeps of several workers, and a job settling the same
   * transfer, never handle it at once, and none waits for another. Undefined when none is left. A step that
   * fails rolls back whole (the transfer stays as it was) and comes back with its `error`; a failure of the
   * claim itself (the database) is thrown.
   */
  async recoverNext(
    olderThan: Date,
    after: RecoveryPosition,
    outcomeFor: (identifier: string) => Promise<SettlementOutcome>,
  ): Promise<RecoveryStep | undefined> {
    const claimed: { step?: RecoveryStep } = {};
    try {
      await this.dataSource.transaction(async (manager) => {
        const [row] = (await manager.query(
          `SELECT ${LOCKED_COLUMNS}, updated_at::text AS position
             FROM transfers
            WHERE status IN ('INICIADO', 'EN_CURSO') AND route = 'EXTERNAL' AND updated_at < $1
              AND updated_at >= $2::timestamptz AND (updated_at, id) > ($2::timestamptz, $3::uuid)
            ORDER BY updated_at, id
            LIMIT 1
              FOR UPDATE SKIP LOCKED`,
          [olderThan, after.at, after.id],
        )) as (LockedTransfer & { position: string })[];
        if (!row) return;
        claimed.step = { id: row.id, position: { at: row.position, id: row.id } };
        const transfer: LockedTransfer = row;
        if (transfer.status === 'INICIADO') {
          await this.presentLocked(manager, transfer);
          transfer.status = 'EN_CURSO';
        }
        await this.settleLocked(manager, transfer, await outcomeFor(transfer.counterparty_identifier));
      });
    } catch (error) {
      if (!claimed.step) throw error;
      return { ...claimed.step, error };
    }
    return claimed.step;
  }

  /** INICIADO → EN_CURSO of a transfer whose row lock this transaction holds. */
  private async presentLocked(manager: EntityManager, transfer: LockedTransfer): Promise<void> {
    const clearingId = `CLR${Date.now()}${randomBytes(4).toString('hex').toUpperCase()}`;
    await this.writer.moveStatus(manager, { id: transfer.id, from: 'INICIADO', to: 'EN_CURSO', clearingId });
  }

  /** The verdict on a transfer in flight whose row lock this transaction holds. */
  private async settleLocked(
    manager: EntityManager,
    transfer: LockedTransfer,
    outcome: SettlementOutcome,
  ): Promise<void> {
    // Only the rail's steps: a COMMITING row is not the rail's yet, whatever the status machine allows it; an
    // outcome the type does not admit can still come from data (a directory's fixture).
    if (
      transfer.status === 'COMMITING' ||
      !SETTLEMENT_OUTCOMES.includes(outcome) ||
      !canMove(transfer.status, outcome)
    )
      throw new IllegalClearingMove(transfer.id, transfer.status, outcome);
    const transferId = transfer.id;
    const amount = fromDb(transfer.amount);
    const fee = fromDb(transfer.fees);
    const tax = fromDb(transfer.taxes);
    const currency = transfer.currency;
    await this.ledger.lockWallets(manager, [transfer.account_id]);
    // One transaction is one connection: its queries go one after another, never side by side (pg 8.19+
    // deprecates a query on a busy client and pg 9 drops the client's queue).
    const settlement = await this.ledger.systemAccount(manager, 'SETTLEMENT', currency);
    const holds = await this.ledger.systemAccount(manager, 'HOLDS', currency);
    const feeRevenue = await this.ledger.systemAccount(manager, 'FEE_REVENUE', currency);
    const taxPayable = await this.ledger.systemAccount(manager, 'TAX_PAYABLE', currency);
    const actor = 'system:clearing';
    if (transfer.movement_type === 'WITHDRAW') {
      const total = amount.plus(fee).plus(tax);
      const lines =
        outcome === 'ACREDITADO'
          ? [
              { accountId: holds, amount: total.negated(), currency },
              { accountId: settlement, amount, currency },
              { accountId: feeRevenue, amount: fee, currency },
              { accountId: taxPayable, amount: tax, currency },
            ]
          : [
              { accountId: holds, amount: total.negated(), currency },
              { accountId: transfer.account_id, amount: total, currency },
            ];
      await this.ledger.post(manager, {
        appId: transfer.app_id,
        kind: outcome === 'ACREDITADO' ? 'TRANSFER_CAPTURE' : 'TRANSFER_RELEASE',
        reference: transfer.id,
        actor,
        lines,
      });
      if (outcome === 'ACREDITADO')
        await this.limits.addOperated(manager, transfer.account_id, 'withdraw', amount);
    } else if (outcome === 'ACREDITADO') {
      await this.ledger.post(manager, {
        appId: transfer.app_id,
        kind: 'TRANSFER_CREDIT',
        reference: transfer.id,
        actor,
        lines: [
          { accountId: settlement, amount: amount.negated(), currency },
          { accountId: transfer.account_id, amount: amount.minus(fee).minus(tax), currency },
          { accountId: feeRevenue, amount: fee, currency },
          { accountId: taxPayable, amount: tax, currency },
        ],
      });
      await this.limits.addOperated(manager, transfer.account_id, 'deposit', amount);
    }
    await this.writer.moveStatus(manager, { id: transferId, from: transfer.status, to: outcome });
    await this.webhooks.emit(manager, {
      appId: transfer.app_id,
      event: WEBHOOK_EVENTS.transferUpdate,
      subject: transfer.id,
      data: {
        uuid: transfer.id,
        movementType: transfer.movement_type,
        backStatus: webhookStatus(transfer.status),
        newStatus: webhookStatus(outcome),
      },
    });
    await auditAppend(manager, systemActor('clearing', 'clearing settle', transfer.app_id), {
      resourceType: 'transfer',
      resourceId: transfer.id,
      outcome,
    });
  }

  async identifierOf(transferId: string): Promise<string | undefined> {
    const [row] = (await this.dataSource.query(
      `SELECT counterparty_identifier FROM transfers WHERE id = $1`,
      [transferId],
    )) as { counterparty_identifier: string }[];
    return row?.counterparty_identifier;
  }

  private async lock(manager: EntityManager, id: string): Promise<LockedTransfer | undefined> {
    const [row] = (await manager.query(
      `SELECT ${LOCKED_COLUMNS} FROM transfers WHERE id = $1 AND route = 'EXTERNAL' FOR UPDATE`,
      [id],
    )) as LockedTransfer[];
    return row;
  }
}
