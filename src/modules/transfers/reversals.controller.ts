import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ApiForbidden, ErrorResponses } from '#common/http/openapi.js';
import { CreateReversalDto, ReversalInfoDto, ReversalsSummaryDto } from './dto/reversal.dto.js';
import { ReversalsService } from './reversals.service.js';
import { IdempotencyKey, IdempotencyKeyHeader } from '#common/http/idempotency-key.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

/** Reversals of settled transfers (docs/decisions/0031-reversals.md). */
@ApiTags('Transfers')
@Controller()
@ErrorResponses()
export class ReversalsController {
  constructor(private readonly reversals: ReversalsService) {}

  @Post('wallet/transactions/:uuid/reversals')
  @AuthEither()
  @ApiOperation({
    summary:
      'Give money back along a settled internal transfer (by the application of the account that received it, or with a user token by its owner): a new transfer linked to it',
    operationId: 'createReversal',
  })
  @IdempotencyKeyHeader()
  @ApiCreatedResponse({
    type: ReversalInfoDto,
    description: 'the new WITHDRAW of the account that gives back',
  })
  @ApiForbidden(
    "INVALID_STATE: not ACREDITADO, a reversal itself, external, fully reversed, or an account not ACTIVE; FORBIDDEN: the receiving account is another application's (with a user token, another owner's)",
  )
  create(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Body() body: CreateReversalDto,
    @IdempotencyKey() idempotencyKey?: string,
  ): Promise<ReversalInfoDto> {
    return this.reversals.reverse(principal, uuid, body, idempotencyKey);
  }

  @Get('wallet/transactions/:uuid/reversals')
  @AuthEither()
  @ApiOperation({
    summary: 'What was given back for a transfer (reversals, returns from the rail) and what is left',
    operationId: 'getTransactionReversals',
  })
  @ApiOkResponse({ type: ReversalsSummaryDto })
  summary(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<ReversalsSummaryDto> {
    return this.reversals.summary(principal, uuid);
  }
}
