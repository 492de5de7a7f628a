import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { fromDb, Money, parseAmount, toDb, toJson } from '../money.js';
import type { FeesResponseDto, SetFeesDto } from './dto/account.dto.js';
import { requireAccount } from './account-lookup.js';
import { WalletAccountEntity } from './entities/wallet-account.entity.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';

/** The fee an account is charged per movement: a FIXED amount in its currency, or a PERCENTAGE (at most 100). */
@Injectable()
export class AccountFeesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly ledger: LedgerService,
  ) {}

  async fees(principal: Principal, id: string): Promise<FeesResponseDto> {
    const account = await requireAccount(this.dataSource.manager, principal, id);
    return {
      id: account.feesId,
      accountId: account.id,
      feeType: account.feeType,
      amount: toJson(account.feeAmount),
    };
  }

  async setFees(
    principal: Principal,
    id: string,
    input: SetFeesDto,
  ): Promise<{ status: number; message: string }> {
    await this.dataSource.transaction(async (manager) => {
      const account = await requireAccount(manager, principal, id, true);
      // Transfers read the fee under the account's ledger lock: a change takes it too (after the account's
      // row, as close does), so it waits for a transfer that already read it (decision 0068).
      await this.ledger.lockWallets(manager, [account.id]);
      let amount: Money;
      if (input.feeType === 'PERCENTAGE') {
        amount = parseAmount(input.amount, 'PERCENT', 'amount');
        if (amount.gt(100))
          throw ValidationFailedError.single('amount', 'invalid', 'a percentage fee is at most 100');
      } else {
        amount = parseAmount(input.amount, account.currency, 'amount');
      }
      // The same type and amount again record `unchanged` (decision 0032), the amounts compared as exact decimals.
      const changed = input.feeType !== account.feeType || !amount.eq(fromDb(account.feeAmount));
      if (changed) {
        await manager.update(
          WalletAccountEntity,
          { id: account.id },
          { feeType: input.feeType, feeAmount: toDb(amount) },
        );
      }
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'account',
        resourceId: account.id,
        outcome: changed ? 'fees set' : 'unchanged',
      });
    });
    return { status: 200, message: 'Fees updated' };
  }
}
