import { Body, Controller, Get, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ApiForbidden, ApiNotFound, ErrorResponses } from '#common/http/openapi.js';
import { PageQueryDto, type Page } from '#common/http/pagination.js';
import type { KycHistoryEntryDto } from '#modules/kyc/history/kyc-history.dto.js';
import { KycHistoryRoute } from '#modules/kyc/history/kyc-history.js';
import { CreateUserKycDataDto, UpdateUserKycDataDto, UserKycDataDto } from './dto/user-kyc-data.dto.js';
import { UserKycDataService } from './user-kyc-data.service.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

/** A user's KYC data (the interface defines the data, not the routes: docs/decisions/0009-identity.md). */
@ApiTags('Users')
@Controller()
@ErrorResponses()
export class UserKycDataController {
  constructor(private readonly kyc: UserKycDataService) {}

  @Post('users/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({
    summary: "Create a user's KYC data (CreateUserKYCDataRequest)",
    operationId: 'createUserKycData',
  })
  @ApiCreatedResponse({ type: UserKycDataDto })
  @ApiNotFound('Unknown user')
  create(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Body() body: CreateUserKycDataDto,
  ): Promise<UserKycDataDto> {
    return this.kyc.create(principal, uuid, body);
  }

  @Get('users/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({
    summary: "A user's KYC data (uuid null and fields null until created)",
    operationId: 'getUserKycData',
  })
  @ApiOkResponse({ type: UserKycDataDto })
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<UserKycDataDto> {
    return this.kyc.get(principal, uuid);
  }

  @Patch('users/:uuid/kyc-data')
  @AuthEither()
  @ApiOperation({
    summary: "Modify a user's KYC data (isBlackListed: client credentials only)",
    operationId: 'updateUserKycData',
  })
  @ApiOkResponse({ type: UserKycDataDto })
  @ApiForbidden('INSUFFICIENT_PERMISSIONS: isBlackListed sent with a user token')
  update(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Body() body: UpdateUserKycDataDto,
  ): Promise<UserKycDataDto> {
    return this.kyc.update(principal, uuid, body);
  }

  @KycHistoryRoute('users/:uuid/kyc-data/history', 'user', 'listUserKycHistory')
  history(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Query() query: PageQueryDto,
  ): Promise<Page<KycHistoryEntryDto>> {
    return this.kyc.history(principal, uuid, query.limit, query.cursor);
  }
}
