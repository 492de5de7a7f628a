import { Global, Module } from '@nestjs/common';
import { KYC_OWNERS } from '#modules/kyc/owners/kyc-owners.port.js';
import { CompaniesController } from './companies.controller.js';
import { CompaniesService } from './companies.service.js';
import { CompanyKycDataController } from './company-kyc-data.controller.js';
import { CompanyKycDataService } from './company-kyc-data.service.js';

/**
 * Companies, their KYC sections and history. A company's wallet accounts are
 * asked through OWNER_ACCOUNTS, which the process must provide
 * (WalletReadModule): without it the module does not boot. The wallet reads
 * companies through CompaniesService.
 */
@Module({
  controllers: [CompaniesController, CompanyKycDataController],
  providers: [CompaniesService, CompanyKycDataService],
  exports: [CompaniesService],
})
export class CompaniesModule {}

/** Companies as owners of KYC documents and sessions: provides kyc's KYC_OWNERS.COMPANY. */
@Global()
@Module({
  imports: [CompaniesModule],
  providers: [{ provide: KYC_OWNERS.COMPANY, useExisting: CompaniesService }],
  exports: [KYC_OWNERS.COMPANY],
})
export class CompaniesAsKycOwnersModule {}
