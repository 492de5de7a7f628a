import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import { AuthClient, AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ErrorResponseDto, ErrorResponses } from '#common/http/openapi.js';
import { Paginated, type Page } from '#common/http/pagination.js';
import {
  CreateTransactionDto,
  CreateTransactionResponseDto,
  TransactionInfoDto,
  TransactionListQueryDto,
} from './dto/transfer.dto.js';
import { TransfersService } from './transfers.service.js';
import { IdempotencyKey } from './idempotency-key.decorator.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

const ListFilters = () => (target: object, key: string | symbol, descriptor: PropertyDescriptor) => {
  ApiQuery({ name: 'status', required: false })(target, key, descriptor);
  ApiQuery({ name: 'movementType', required: false, enum: ['DEPOSIT', 'WITHDRAW'] })(target, key, descriptor);
  ApiQuery({ name: 'from', required: false, description: 'created at or after (ISO date)' })(
    target,
    key,
    descriptor,
  );
  ApiQuery({ name: 'to', required: false, description: 'created before (ISO date)' })(
    target,
    key,
    descriptor,
  );
};

@ApiTags('Transfers')
@Controller()
@ErrorResponses()
export class TransfersController {
  constructor(private readonly transfers: TransfersService) {}

  @Get('wallet/transactions/all')
  @AuthClient()
  @Paginated()
  @ListFilters()
  @ApiOperation({ summary: "The application's transfers, newest first" })
  @ApiOkResponse({ type: [TransactionInfoDto] })
  all(
    @CurrentPrincipal() principal: Principal,
    @Query() query: TransactionListQueryDto,
  ): Promise<Page<TransactionInfoDto>> {
    return this.transfers.list(principal, query, query.limit, query.cursor);
  }

  @Post('wallet/transactions')
  @AuthEither()
  @ApiOperation({
    summary: 'Create a transfer (internal: settled at once; external: held and sent to the clearing rail)',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'retries with the same key and body get the first answer; kept at least 24 h',
  })
  @ApiCreatedResponse({ type: CreateTransactionResponseDto })
  @ApiForbiddenResponse({
    type: ErrorResponseDto,
    description: 'INVALID_STATE: the account (or the receiving one) is not ACTIVE',
  })
  create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: CreateTransactionDto,
    @IdempotencyKey() idempotencyKey?: string,
  ): Promise<CreateTransactionResponseDto> {
    return this.transfers.create(principal, body, idempotencyKey);
  }

  @Get('wallet/transactions/:uuid')
  @AuthEither()
  @ApiOperation({ summary: 'A transfer' })
  @ApiOkResponse({ type: TransactionInfoDto })
  @ApiNotFoundResponse({ type: ErrorResponseDto, description: 'Unknown transfer' })
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<TransactionInfoDto> {
    return this.transfers.get(principal, uuid);
  }

  @Get('wallet/accounts/:uuid/transactions')
  @AuthEither()
  @Paginated()
  @ListFilters()
  @ApiOperation({ summary: "An account's transfers (both sides of internal ones), newest first" })
  @ApiOkResponse({ type: [TransactionInfoDto] })
  @ApiNotFoundResponse({ type: ErrorResponseDto, description: 'Unknown account' })
  ofAccount(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Query() query: TransactionListQueryDto,
  ): Promise<Page<TransactionInfoDto>> {
    return this.transfers.list(
      principal,
      { ...query, accountId: uuid.toLowerCase() },
      query.limit,
      query.cursor,
    );
  }
}
