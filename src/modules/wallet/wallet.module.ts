import { Module } from '@nestjs/common';
import { CompaniesModule } from '../companies/companies.module.js';
import { UsersModule } from '../users/users.module.js';
import { AccountsController } from './accounts/accounts.controller.js';
import { AccountsService } from './accounts/accounts.service.js';
import { BalanceReader } from './accounts/balance-reader.js';
import { LedgerService } from './ledger/ledger.service.js';

/** Wallet accounts on the double-entry ledger. Transfers post into it through LedgerService. */
@Module({
  imports: [UsersModule, CompaniesModule],
  controllers: [AccountsController],
  providers: [AccountsService, BalanceReader, LedgerService],
  exports: [AccountsService, LedgerService],
})
export class WalletModule {}
