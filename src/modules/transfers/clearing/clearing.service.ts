import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { WEBHOOK_EVENTS } from '#modules/webhooks/webhook-events.js';
import { WebhooksService } from '#modules/webhooks/webhooks.service.js';
import { AccountLimitsService } from '#modules/wallet/accounts/account-limits.service.js';
import { LedgerService } from '#modules/wallet/ledger/ledger.service.js';
import { fromDb } from '#modules/wallet/money.js';
import { canMove, webhookStatus, type TransferStatus } from '../transfer-status.js';
import { TransferWriter } from '../transfer-writer.js';
import { auditAppend, systemActor } from '#modules/audit/audit-trail.js';

export type SettlementOutcome = 'ACREDITADO' | 'ERROR_DATOS' | 'SIN_GARANTIA' | 'ERROR_ACREDITACION';

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
      const clearingId = `CLR${Date.now()}${randomBytes(4).toString('hex').toUpperCase()}`;
      await this.writer.moveStatus(manager, { id: transferId, from: 'INICIADO', to: 'EN_CURSO', clearingId });
      return true;
    });
  }

  /** The rail's verdict: a final status, with its money movement and a transfer_update webhook. */
  async settle(transferId: string, outcome: SettlementOutcome): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const transfer = await this.lock(manager, transferId);
      if (!transfer || !canMove(transfer.status, outcome) || transfer.status === 'COMMITING') return false;
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
      return true;
    });
  }

  /** External transfers still in flight since before `olderThan` (for the recovery sweep). */
  async stalled(
    olderThan: Date,
    limit = 500,
  ): Promise<{ id: string; status: TransferStatus; counterpartyIdentifier: string }[]> {
    const rows = (await this.dataSource.query(
      `SELECT id, status, counterparty_identifier FROM transfers
        WHERE status IN ('INICIADO', 'EN_CURSO') AND route = 'EXTERNAL' AND updated_at < $1
        ORDER BY updated_at LIMIT $2`,
      [olderThan, limit],
    )) as { id: string; status: TransferStatus; counterparty_identifier: string }[];
    return rows.map((row) => ({
      id: row.id,
      status: row.status,
      counterpartyIdentifier: row.counterparty_identifier,
    }));
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
      `SELECT id, app_id, account_id, movement_type, status, amount::text AS amount, fees::text AS fees,
              taxes::text AS taxes, currency, counterparty_identifier
         FROM transfers WHERE id = $1 AND route = 'EXTERNAL' FOR UPDATE`,
      [id],
    )) as LockedTransfer[];
    return row;
  }
}
