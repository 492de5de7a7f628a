import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { type AuditActor, auditAppend } from '#modules/audit/audit-trail.js';
import { AccountsService } from '#modules/wallet/accounts/accounts.service.js';
import { LedgerService } from '#modules/wallet/ledger/ledger.service.js';
import { fromDb, toJson } from '#modules/wallet/money.js';

/** A return from the rail whose account was closed, as the CLI prints it (decision 0062). */
export interface UnclaimedReturnView {
  /** The return: the DEPOSIT row of the closed account. */
  transferId: string;
  /** The WITHDRAW it returned. */
  returnOf: string;
  appId: string;
  /** The closed account. */
  accountId: string;
  ownerType: 'USER' | 'COMPANY';
  ownerId: string;
  amount: number;
  currency: string;
  returnedAt: string;
  /** UNCLAIMED: the system account UNCLAIMED_RETURNS holds it; PAID_OUT: paid into `paidOutTo`. */
  status: 'UNCLAIMED' | 'PAID_OUT';
  paidOutAt: string | null;
  paidOutTo: string | null;
}

export interface UnclaimedReturnsPage {
  items: UnclaimedReturnView[];
  /** `--after` for the next page; null on the last one. */
  nextCursor: string | null;
  /** What UNCLAIMED_RETURNS holds, per currency, over every page (of the application, with --app). */
  held: { currency: string; count: number; amount: number }[];
}

interface Row {
  transfer_id: string;
  reversal_of: string;
  app_id: string;
  account_id: string;
  owner_type: 'USER' | 'COMPANY';
  owner_id: string;
  amount: string;
  currency: string;
  created_at: Date;
  paid_out_at: Date | null;
  paid_out_to: string | null;
}

const ROWS = `SELECT u.transfer_id, t.reversal_of, t.app_id, t.account_id, a.owner_type, a.owner_id,
                     t.amount::text AS amount, t.currency, t.created_at, u.paid_out_at, u.paid_out_to
                FROM unclaimed_returns u
                JOIN transfers t ON t.id = u.transfer_id
                JOIN wallet_accounts a ON a.id = t.account_id`;

/**
 * The rail's returns to closed accounts (docs/decisions/0062-returns-to-closed-accounts.md):
 * wallet_reverse_transfer books each one's money to the system account UNCLAIMED_RETURNS and names its DEPOSIT
 * in `unclaimed_returns`; the operator lists them here and pays one out into an account of the same owner. The
 * suspense account's balance in a currency is always what the listed UNCLAIMED returns add up to.
 */
@Injectable()
export class UnclaimedReturnsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly accounts: AccountsService,
    private readonly ledger: LedgerService,
  ) {}

  /** Oldest first (a return's id is time-ordered); paid-out ones too with `all`. */
  async list(filter: {
    appId?: string;
    all?: boolean;
    after?: string;
    limit: number;
  }): Promise<UnclaimedReturnsPage> {
    const rows = (await this.dataSource.query(
      `${ROWS}
        WHERE ($1::uuid IS NULL OR t.app_id = $1) AND ($2 OR u.paid_out_at IS NULL)
          AND ($3::uuid IS NULL OR u.transfer_id > $3)
        ORDER BY u.transfer_id LIMIT $4`,
      [filter.appId ?? null, filter.all === true, filter.after ?? null, filter.limit + 1],
    )) as Row[];
    const held = (await this.dataSource.query(
      `SELECT t.currency, count(*)::int AS count, sum(t.amount)::text AS amount
         FROM unclaimed_returns u JOIN transfers t ON t.id = u.transfer_id
        WHERE u.paid_out_at IS NULL AND ($1::uuid IS NULL OR t.app_id = $1)
        GROUP BY t.currency ORDER BY t.currency`,
      [filter.appId ?? null],
    )) as { currency: string; count: number; amount: string }[];
    const page = rows.slice(0, filter.limit);
    return {
      items: page.map(viewOf),
      nextCursor: rows.length > filter.limit ? page[page.length - 1].transfer_id : null,
      held: held.map((row) => ({ currency: row.currency, count: row.count, amount: toJson(row.amount) })),
    };
  }

  /**
   * Pays the return `transferId` out of UNCLAIMED_RETURNS into `accountId`, an ACTIVE account of the closed
   * account's owner in the same application and currency: one entry UNCLAIMED_RETURN_PAYOUT (UNCLAIMED_RETURNS
   * -amount, the account +amount, reference the return), the row marked paid out, an audit record for each.
   * Paid out into the same account already, it answers that pay-out and writes nothing; into another, it is
   * refused.
   */
  async payOut(transferId: string, accountId: string, actor: AuditActor): Promise<UnclaimedReturnView> {
    const id = transferId.toLowerCase();
    const to = accountId.toLowerCase();
    return this.dataSource.transaction(async (manager) => {
      const held = await this.find(manager, id, true);
      if (!held) throw new NotFoundError(transferId, 'No unclaimed return with that id');
      if (held.paid_out_to !== null) {
        if (held.paid_out_to === to) return viewOf(held);
        throw new ForbiddenError('INVALID_STATE', `the return was paid out to ${held.paid_out_to} already`);
      }
      // Locked as every change of an account locks it (its row, then its ledger row), its state read under the
      // lock: an account being closed is seen closed.
      const account = await this.accounts.require(manager, { kind: 'client', appId: held.app_id }, to, true);
      if (account.ownerType !== held.owner_type || account.ownerId !== held.owner_id)
        throw ValidationFailedError.single(
          'to',
          'invalid',
          "the account is not of the closed account's owner in its application",
        );
      if (account.currency !== held.currency)
        throw ValidationFailedError.single(
          'to',
          'invalid',
          `the account is in ${account.currency}, the return in ${held.currency}`,
        );
      if (account.status !== 'ACTIVE')
        throw new ForbiddenError('INVALID_STATE', `the account is ${account.status}`);
      await this.ledger.lockWallets(manager, [account.id]);
      const amount = fromDb(held.amount);
      const suspense = await this.ledger.systemAccount(manager, 'UNCLAIMED_RETURNS', held.currency);
      await this.ledger.post(manager, {
        appId: held.app_id,
        kind: 'UNCLAIMED_RETURN_PAYOUT',
        reference: id,
        description: 'unclaimed return paid out',
        actor: actor.actor,
        lines: [
          { accountId: suspense, amount: amount.negated(), currency: held.currency },
          { accountId: account.id, amount, currency: held.currency },
        ],
      });
      await manager.query(
        `UPDATE unclaimed_returns SET paid_out_at = now(), paid_out_to = $2 WHERE transfer_id = $1`,
        [id, account.id],
      );
      await auditAppend(
        manager,
        { ...actor, appId: held.app_id },
        { resourceType: 'transfer', resourceId: id, outcome: 'paid out' },
        { resourceType: 'account', resourceId: account.id, outcome: 'unclaimed return paid in' },
      );
      return viewOf((await this.find(manager, id, false))!);
    });
  }

  private async find(manager: EntityManager, id: string, lock: boolean): Promise<Row | undefined> {
    const [row] = (await manager.query(`${ROWS} WHERE u.transfer_id = $1${lock ? ' FOR UPDATE OF u' : ''}`, [
      id,
    ])) as Row[];
    return row;
  }
}

function viewOf(row: Row): UnclaimedReturnView {
  return {
    transferId: row.transfer_id,
    returnOf: row.reversal_of,
    appId: row.app_id,
    accountId: row.account_id,
    ownerType: row.owner_type,
    ownerId: row.owner_id,
    amount: toJson(row.amount),
    currency: row.currency,
    returnedAt: row.created_at.toISOString(),
    status: row.paid_out_at === null ? 'UNCLAIMED' : 'PAID_OUT',
    paidOutAt: row.paid_out_at === null ? null : row.paid_out_at.toISOString(),
    paidOutTo: row.paid_out_to,
  };
}
