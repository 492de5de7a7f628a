import { applyDecorators, Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { AuthClient, AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ApiForbidden, ApiNotFound, ErrorResponses } from '#common/http/openapi.js';
import { Paginated, type Page } from '#common/http/pagination.js';
import {
  CreateTransactionDto,
  CreateTransactionResponseDto,
  MOVEMENT_TYPE_ENUM,
  TRANSACTION_STATUS_ENUM,
  TransactionInfoDto,
  TransactionListQueryDto,
} from './dto/transfer.dto.js';
import { DATE_OR_UTC_INSTANT } from '#common/http/instant.js';
import { TransfersService } from './transfers.service.js';
import { IdempotencyKey, IdempotencyKeyHeader } from '#common/http/idempotency-key.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

/** A date (midnight UTC) or a UTC date-time ending in Z, as the transfer lists take `from` and `to`. */
const DATE_OR_INSTANT_SCHEMA = { type: 'string', pattern: DATE_OR_UTC_INSTANT.source } as const;
const DATE_OR_INSTANT =
  'a date (YYYY-MM-DD, midnight UTC) or a UTC date-time (YYYY-MM-DDThh:mm[:ss[.fraction]]Z)';

const ListFilters = () =>
  applyDecorators(
    ApiQuery({ name: 'status', required: false, ...TRANSACTION_STATUS_ENUM }),
    ApiQuery({ name: 'movementType', required: false, ...MOVEMENT_TYPE_ENUM }),
    ApiQuery({
      name: 'from',
      required: false,
      description: `created at or after: ${DATE_OR_INSTANT}`,
      schema: DATE_OR_INSTANT_SCHEMA,
    }),
    ApiQuery({
      name: 'to',
      required: false,
      description: `created before: ${DATE_OR_INSTANT}`,
      schema: DATE_OR_INSTANT_SCHEMA,
    }),
  );

@ApiTags('Transfers')
@Controller()
@ErrorResponses()
export class TransfersController {
  constructor(private readonly transfers: TransfersService) {}

  @Get('wallet/transactions/all')
  @AuthClient()
  @Paginated()
  @ListFilters()
  @ApiOperation({ summary: "The application's transfers, newest first", operationId: 'listTransactions' })
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
    operationId: 'createTransaction',
  })
  @IdempotencyKeyHeader()
  @ApiCreatedResponse({ type: CreateTransactionResponseDto })
  @ApiForbidden('INVALID_STATE: the account (or the receiving one) is not ACTIVE')
  create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: CreateTransactionDto,
    @IdempotencyKey() idempotencyKey?: string,
  ): Promise<CreateTransactionResponseDto> {
    return this.transfers.create(principal, body, idempotencyKey);
  }

  @Get('wallet/transactions/:uuid')
  @AuthEither()
  @ApiOperation({ summary: 'A transfer', operationId: 'getTransaction' })
  @ApiOkResponse({ type: TransactionInfoDto })
  @ApiNotFound('Unknown transfer')
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
  @ApiOperation({
    summary: "An account's transfers (both sides of internal ones), newest first",
    operationId: 'listAccountTransactions',
  })
  @ApiOkResponse({ type: [TransactionInfoDto] })
  @ApiNotFound('Unknown account')
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
