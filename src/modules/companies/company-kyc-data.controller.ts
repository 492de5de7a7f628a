import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ErrorResponses } from '#common/http/openapi.js';
import { PageQueryDto, type Page } from '#common/http/pagination.js';
import type { KycHistoryEntryDto } from '#modules/kyc/history/kyc-history.dto.js';
import { KycHistoryRoute } from '#modules/kyc/history/kyc-history.js';
import { CompanyKycDataService } from './company-kyc-data.service.js';
import { CompanyKycDataDto, CreateCompanyKycDataDto } from './dto/company-kyc-data.dto.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

/**
 * A company's KYC data (docs/decisions/0009-identity.md); a section is replaced through PATCH
 * /companies/{uuid} (CompaniesController).
 */
@ApiTags('Companies')
@Controller()
@ErrorResponses()
export class CompanyKycDataController {
  constructor(private readonly kyc: CompanyKycDataService) {}

  @Post('companies/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({
    summary: "Create a company's KYC datosBasicos section (CreateCompanyKYCDataRequest)",
    operationId: 'createCompanyKycData',
  })
  @ApiCreatedResponse({ type: CompanyKycDataDto })
  create(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Body() body: CreateCompanyKycDataDto,
  ): Promise<CompanyKycDataDto> {
    return this.kyc.create(principal, uuid, body.data);
  }

  @Get('companies/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({
    summary: "A company's KYC data, the four sections",
    operationId: 'getCompanyKycData',
  })
  @ApiOkResponse({ type: CompanyKycDataDto })
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<CompanyKycDataDto> {
    return this.kyc.get(principal, uuid);
  }

  @KycHistoryRoute('companies/:uuid/kyc-data/history', 'company', 'listCompanyKycHistory')
  history(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Query() query: PageQueryDto,
  ): Promise<Page<KycHistoryEntryDto>> {
    return this.kyc.history(principal, uuid, query.limit, query.cursor);
  }
}
