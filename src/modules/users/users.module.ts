import { Global, Module } from '@nestjs/common';
import { KYC_OWNERS } from '#modules/kyc/owners/kyc-owners.port.js';
import { UserKycDataController } from './user-kyc-data.controller.js';
import { UserKycDataService } from './user-kyc-data.service.js';
import { UsersController } from './users.controller.js';
import { UsersService } from './users.service.js';

/**
 * Natural-person users and their KYC data. A user's wallet account is read
 * through OWNER_ACCOUNTS, which the process must provide (WalletReadModule):
 * without it the module does not boot. The wallet reads users through
 * UsersService.
 */
@Module({
  controllers: [UsersController, UserKycDataController],
  providers: [UsersService, UserKycDataService],
  exports: [UsersService],
})
export class UsersModule {}

/** Users as owners of KYC documents and sessions: provides kyc's KYC_OWNERS.USER (kyc does not import users). */
@Global()
@Module({
  imports: [UsersModule],
  providers: [{ provide: KYC_OWNERS.USER, useExisting: UsersService }],
  exports: [KYC_OWNERS.USER],
})
export class UsersAsKycOwnersModule {}
