import { Body, Controller, Get, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { AuthClient, AuthEither } from '../../../common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '../../../common/auth/principal.js';
import { ErrorResponseDto, ErrorResponses } from '../../../common/http/openapi.js';
import { Paginated, PageQueryDto, type Page } from '../../../common/http/pagination.js';
import {
  CompanyKycDataDto,
  CreateCompanyKycDataDto,
  CreateUserKycDataDto,
  KycHistoryEntryDto,
  UpdateUserKycDataDto,
  UserKycDataDto,
} from './dto/kyc.dto.js';
import { KycDataService } from './kyc-data.service.js';

/** KYC data routes (the interface defines the data, not the routes: docs/decisions/0009-identity.md). */
@ApiTags('KYC data')
@Controller()
@ErrorResponses()
export class KycDataController {
  constructor(private readonly kyc: KycDataService) {}

  @Post('users/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({ summary: "Create a user's KYC data (CreateUserKYCDataRequest)" })
  @ApiCreatedResponse({ type: UserKycDataDto })
  @ApiNotFoundResponse({ type: ErrorResponseDto, description: 'Unknown user' })
  createUser(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', ParseUUIDPipe) uuid: string,
    @Body() body: CreateUserKycDataDto,
  ): Promise<UserKycDataDto> {
    return this.kyc.createForUser(principal, uuid, body);
  }

  @Get('users/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({ summary: "A user's KYC data (uuid null and fields null until created)" })
  @ApiOkResponse({ type: UserKycDataDto })
  getUser(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', ParseUUIDPipe) uuid: string,
  ): Promise<UserKycDataDto> {
    return this.kyc.getForUser(principal, uuid);
  }

  @Patch('users/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({ summary: "Modify a user's KYC data (isBlackListed: client credentials only)" })
  @ApiOkResponse({ type: UserKycDataDto })
  updateUser(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', ParseUUIDPipe) uuid: string,
    @Body() body: UpdateUserKycDataDto,
  ): Promise<UserKycDataDto> {
    return this.kyc.updateForUser(principal, uuid, body);
  }

  @Get('users/:uuid/kyc-data/history')
  @AuthClient()
  @Paginated()
  @ApiOperation({ summary: "Every change of a user's KYC data: who, when, before, after" })
  @ApiOkResponse({ type: [KycHistoryEntryDto] })
  userHistory(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', ParseUUIDPipe) uuid: string,
    @Query() query: PageQueryDto,
  ): Promise<Page<KycHistoryEntryDto>> {
    return this.kyc.history(principal, 'USER', uuid, query.limit, query.cursor);
  }

  @Post('companies/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({ summary: "Create a company's KYC datosBasicos section (CreateCompanyKYCDataRequest)" })
  @ApiCreatedResponse({ type: CompanyKycDataDto })
  createCompany(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', ParseUUIDPipe) uuid: string,
    @Body() body: CreateCompanyKycDataDto,
  ): Promise<CompanyKycDataDto> {
    return this.kyc.createForCompany(principal, uuid, body.data);
  }

  @Get('companies/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({ summary: "A company's KYC data, the four sections" })
  @ApiOkResponse({ type: CompanyKycDataDto })
  getCompany(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', ParseUUIDPipe) uuid: string,
  ): Promise<CompanyKycDataDto> {
    return this.kyc.getForCompany(principal, uuid);
  }

  @Get('companies/:uuid/kyc-data/history')
  @AuthClient()
  @Paginated()
  @ApiOperation({ summary: "Every change of a company's KYC data: who, when, before, after" })
  @ApiOkResponse({ type: [KycHistoryEntryDto] })
  companyHistory(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', ParseUUIDPipe) uuid: string,
    @Query() query: PageQueryDto,
  ): Promise<Page<KycHistoryEntryDto>> {
    return this.kyc.history(principal, 'COMPANY', uuid, query.limit, query.cursor);
  }
}
