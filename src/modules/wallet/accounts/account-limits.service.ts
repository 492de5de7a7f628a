import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { fromDb, Money, parseAmount, toDb, toJson } from '../money.js';
import { periodsOf } from '../periods.js';
import type { LimitsResponseDto, OperadoResponseDto, SetLimitsDto } from './dto/account.dto.js';
import { requireAccount } from './account-lookup.js';
import { WalletAccountEntity } from './entities/wallet-account.entity.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';

/**
 * An account's deposit and withdraw limits, and the operated amounts (this month's and this year's deposits and
 * withdrawals, OPERATIONS_TIME_ZONE calendar) counted against them. The transfer path checks both in the
 * database (`wallet_check_limits`, `wallet_add_operated`).
 */
@Injectable()
export class AccountLimitsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly ledger: LedgerService,
  ) {}

  async limits(principal: Principal, id: string): Promise<LimitsResponseDto> {
    const account = await requireAccount(this.dataSource.manager, principal, id);
    return {
      data: {
        id: account.limitsId,
        accountId: account.id,
        monthlyWithdrawLimit: toJson(account.monthlyWithdrawLimit),
        monthlyDepositLimit: toJson(account.monthlyDepositLimit),
        annualWithdrawLimit: toJson(account.annualWithdrawLimit),
        annualDepositLimit: toJson(account.annualDepositLimit),
      },
      statusCode: 200,
    };
  }

  async setLimits(
    principal: Principal,
    id: string,
    input: SetLimitsDto,
  ): Promise<{ status: number; message: string }> {
    await this.dataSource.transaction(async (manager) => {
      const account = await requireAccount(manager, principal, id, true);
      // Transfers read the limits under the account's ledger lock: a change takes it too (after the account's
      // row, as close does), so it waits for a transfer that already read them (decision 0068).
      await this.ledger.lockWallets(manager, [account.id]);
      const currency = account.currency;
      const wanted = {
        monthlyWithdrawLimit: parseAmount(input.monthlyWithdrawLimit, currency, 'monthlyWithdrawLimit'),
        monthlyDepositLimit: parseAmount(input.monthlyDepositLimit, currency, 'monthlyDepositLimit'),
        annualWithdrawLimit: parseAmount(input.annualWithdrawLimit, currency, 'annualWithdrawLimit'),
        annualDepositLimit: parseAmount(input.annualDepositLimit, currency, 'annualDepositLimit'),
      };
      // Only what differs is a change: the same four limits again record `unchanged` (decision 0032), compared
      // as exact decimals with what is stored.
      const changed = (Object.keys(wanted) as (keyof typeof wanted)[]).some(
        (name) => !wanted[name].eq(fromDb(account[name])),
      );
      if (changed) {
        await manager.update(
          WalletAccountEntity,
          { id: account.id },
          {
            monthlyWithdrawLimit: toDb(wanted.monthlyWithdrawLimit),
            monthlyDepositLimit: toDb(wanted.monthlyDepositLimit),
            annualWithdrawLimit: toDb(wanted.annualWithdrawLimit),
            annualDepositLimit: toDb(wanted.annualDepositLimit),
          },
        );
      }
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'account',
        resourceId: account.id,
        outcome: changed ? 'limits set' : 'unchanged',
      });
    });
    return { status: 200, message: 'Limits updated' };
  }

  async operado(principal: Principal, id: string): Promise<OperadoResponseDto> {
    const account = await requireAccount(this.dataSource.manager, principal, id);
    const { month, year } = periodsOf(new Date(), this.config.operationsTimeZone);
    // Operated amounts are kept per month; the year's is the sum of its months (decision 0035), its times the
    // first month's creation and the latest change.
    const [totals] = (await this.dataSource.query(
      `SELECT max(deposit::text) FILTER (WHERE period = $2) AS month_deposit,
              max(withdraw::text) FILTER (WHERE period = $2) AS month_withdraw,
              sum(deposit)::text AS deposit, sum(withdraw)::text AS withdraw,
              min(created_at) AS created_at, max(updated_at) AS updated_at
         FROM operated_amounts WHERE account_id = $1 AND period BETWEEN $3 AND $4`,
      [account.id, month, `M${year.slice(1)}-01`, `M${year.slice(1)}-12`],
    )) as {
      month_deposit: string | null;
      month_withdraw: string | null;
      deposit: string | null;
      withdraw: string | null;
      created_at: Date | null;
      updated_at: Date | null;
    }[];
    return {
      id: account.operadoId,
      accountUUID: account.id,
      monthDeposit: toJson(totals.month_deposit ?? '0'),
      monthWithdraw: toJson(totals.month_withdraw ?? '0'),
      annualDeposit: toJson(totals.deposit ?? '0'),
      annualWithdraw: toJson(totals.withdraw ?? '0'),
      createdAt: (totals.created_at ?? account.createdAt).toISOString(),
      updatedAt: (totals.updated_at ?? account.updatedAt).toISOString(),
    };
  }

  /**
   * Adds a settled movement to the account's operated amounts of the month and year of the caller's transaction
   * (its now(), on OPERATIONS_TIME_ZONE: wallet_periods), the period of the rows it writes (decision 0098).
   */
  async addOperated(
    manager: EntityManager,
    accountId: string,
    side: 'deposit' | 'withdraw',
    amount: Money,
  ): Promise<void> {
    // The same database function the transfer path uses (src/modules/wallet/sql/wallet_add_operated.sql).
    await manager.query(`SELECT wallet_add_operated($1, $2, $3, p.month, p.year) FROM wallet_periods($4) p`, [
      accountId,
      side,
      toDb(amount),
      this.config.operationsTimeZone,
    ]);
  }
}
