import { Global, Module } from '@nestjs/common';
import { OWNER_ACCOUNTS } from '#modules/kyc/owners/owner-accounts.port.js';
import { WalletOwnerAccounts } from './wallet-owner-accounts.js';

/** Provides OWNER_ACCOUNTS to users and companies without them importing the wallet. */
@Global()
@Module({
  providers: [WalletOwnerAccounts, { provide: OWNER_ACCOUNTS, useExisting: WalletOwnerAccounts }],
  exports: [OWNER_ACCOUNTS],
})
export class WalletReadModule {}
