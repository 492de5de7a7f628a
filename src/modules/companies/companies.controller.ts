import { Body, Controller, Get, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ApiNotFound, ErrorResponses } from '#common/http/openapi.js';
import { PageQueryDto, type Page } from '#common/http/pagination.js';
import {
  DeleteOwnerRoute,
  ListOwnersRoute,
  OwnIdentityForbiddenResponse,
} from '#modules/kyc/owners/owner-routes.js';
import { CompaniesService } from './companies.service.js';
import { CompanyKycDataService } from './company-kyc-data.service.js';
import { CompanyKycDataDto, UpdateKycDataDto } from './dto/company-kyc-data.dto.js';
import { CompanyResponseDto, CreateCompanyDto } from './dto/company.dto.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

@ApiTags('Companies')
@Controller('companies')
@ErrorResponses()
export class CompaniesController {
  constructor(
    private readonly companies: CompaniesService,
    private readonly kyc: CompanyKycDataService,
  ) {}

  @Post()
  @AuthEither()
  @ApiOperation({
    summary: 'Register a company (a user token registers the company it names)',
    operationId: 'createCompany',
  })
  @ApiCreatedResponse({ type: CompanyResponseDto })
  create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: CreateCompanyDto,
  ): Promise<CompanyResponseDto> {
    return this.companies.create(principal, body);
  }

  @ListOwnersRoute("The application's companies, oldest first", CompanyResponseDto, 'listCompanies')
  list(
    @CurrentPrincipal() principal: Principal,
    @Query() query: PageQueryDto,
  ): Promise<Page<CompanyResponseDto>> {
    return this.companies.list(principal, query.limit, query.cursor);
  }

  @Get(':uuid')
  @AuthEither()
  @ApiOperation({ summary: 'A company', operationId: 'getCompany' })
  @ApiOkResponse({ type: CompanyResponseDto })
  @ApiNotFound('Unknown company')
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<CompanyResponseDto> {
    return this.companies.get(principal, uuid);
  }

  @Patch(':uuid')
  @AuthEither()
  @ApiOperation({
    summary: "Replace one section of the company's KYC data (UpdateKYCDataRequest)",
    operationId: 'updateCompanyKycData',
    description:
      'With a user token (the company itself), datosBasicos and estructuraCorporativa are refused once they hold ' +
      'data and the new data differs (403 INSUFFICIENT_PERMISSIONS, nothing applied): what KYC verified is the ' +
      "application's to change. A section that holds nothing yet may be given; the data a section has is no " +
      'change and passes.',
  })
  @ApiOkResponse({ type: CompanyKycDataDto, description: 'The company KYC data after the change' })
  @OwnIdentityForbiddenResponse('datosBasicos or estructuraCorporativa once given')
  @ApiNotFound('Unknown company')
  updateKyc(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Body() body: UpdateKycDataDto,
  ): Promise<CompanyKycDataDto> {
    return this.kyc.updateSection(principal, uuid, body.dataSection, body.data);
  }

  @DeleteOwnerRoute('company', 'deleteCompany')
  async remove(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<void> {
    await this.companies.remove(principal, uuid);
  }
}
