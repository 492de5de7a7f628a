import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import { AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ApiForbidden, ApiNotFound, ErrorResponses } from '#common/http/openapi.js';
import {
  CreateKycSessionDto,
  KYC_STEP_ENUM,
  KycSessionDto,
  SubmitKycStepDto,
} from './dto/kyc-session.dto.js';
import { KycSessionsService } from './kyc-sessions.service.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

@ApiTags('KYC')
@Controller('kyc/sessions')
@ErrorResponses()
export class KycSessionsController {
  constructor(private readonly sessions: KycSessionsService) {}

  @Post()
  @AuthEither()
  @ApiOperation({
    summary: 'Start a KYC session for a user or company (every step PENDING)',
    operationId: 'createKycSession',
  })
  @ApiCreatedResponse({ type: KycSessionDto })
  start(@CurrentPrincipal() principal: Principal, @Body() body: CreateKycSessionDto): Promise<KycSessionDto> {
    return this.sessions.start(principal, body.ownerType, body.ownerId);
  }

  @Get(':uuid')
  @AuthEither()
  @ApiOperation({ summary: 'A KYC session with its steps', operationId: 'getKycSession' })
  @ApiOkResponse({ type: KycSessionDto })
  @ApiNotFound('Unknown session')
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<KycSessionDto> {
    return this.sessions.get(principal, uuid);
  }

  @Post(':uuid/steps/:step')
  @AuthEither()
  @HttpCode(202)
  @ApiOperation({
    summary: 'Submit a step for verification; the result arrives as a kyc_steep_update webhook',
    description:
      'DOCUMENT_FRONT, DOCUMENT_BACK and SELFIE need documentUuid (an uploaded document of the owner); ' +
      'GOVERNMENTAL_CHECK_SELFIE checks the SELFIE and needs it submitted first. Simulator: a document whose ' +
      'name starts with FAIL fails its step.',
    operationId: 'submitKycStep',
  })
  @ApiParam({ name: 'step', ...KYC_STEP_ENUM })
  @ApiAcceptedResponse({ type: KycSessionDto })
  @ApiForbidden('INVALID_STATE: session finished, step already submitted, SELFIE missing')
  submit(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Param('step') step: string,
    @Body() body: SubmitKycStepDto,
  ): Promise<KycSessionDto> {
    return this.sessions.submit(principal, uuid, step, body.documentUuid);
  }
}
