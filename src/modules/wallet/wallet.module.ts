import { Module } from '@nestjs/common';
import { SigningKeysModule } from '#modules/auth/signing-keys.module.js';
import { CompaniesModule } from '#modules/companies/companies.module.js';
import { UsersModule } from '#modules/users/users.module.js';
import { AccountsController } from './accounts/accounts.controller.js';
import { AccountFeesService } from './accounts/account-fees.service.js';
import { AccountLimitsService } from './accounts/account-limits.service.js';
import { AccountsService } from './accounts/accounts.service.js';
import { StatementService } from './accounts/statement.service.js';
import { BalanceReader } from './accounts/balance-reader.js';
import { LedgerService } from './ledger/ledger.service.js';

/**
 * Wallet accounts on the double-entry ledger. Transfers post into it through LedgerService and count settled
 * movements through AccountLimitsService.addOperated.
 */
@Module({
  imports: [UsersModule, CompaniesModule, SigningKeysModule],
  controllers: [AccountsController],
  providers: [
    AccountsService,
    AccountLimitsService,
    AccountFeesService,
    BalanceReader,
    LedgerService,
    StatementService,
  ],
  exports: [AccountsService, AccountLimitsService, LedgerService],
})
export class WalletModule {}
