import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Patch,
  Post,
  Query,
  UseInterceptors,
} from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiExtraModels,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import { AuthClient, AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ApiForbidden, ErrorResponses } from '#common/http/openapi.js';
import {
  CURSOR_SCHEMA,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  NEXT_CURSOR_HEADER,
  PAGE_LIMIT_SCHEMA,
} from '#common/http/pagination.js';
import type { OwnerAccountView } from '#modules/kyc/owners/owner-accounts.port.js';
import { AccountInfoDto } from '#modules/users/dto/user.dto.js';
import { AccountFeesService } from './account-fees.service.js';
import { AccountLimitsService } from './account-limits.service.js';
import { AccountsService } from './accounts.service.js';
import {
  BalanceResponseDto,
  CreateAccountDto,
  FeesResponseDto,
  FullOperadoResponseDto,
  LimitsResponseDto,
  MessageResponseDto,
  ModifyAccountDto,
  OperadoResponseDto,
  SetBalanceDto,
  SetFeesDto,
  SetLimitsDto,
  StatusMessageResponseDto,
  UpdateAccountAliasDto,
} from './dto/account.dto.js';
import { STATEMENT_AT_DESCRIPTION, StatementQueryDto, StatementResponseDto } from './dto/statement.dto.js';
import { CSV_HEADER, StatementInterceptor } from './statement-csv.js';
import { StatementService, type StatementPage } from './statement.service.js';
import { DATE_TIME_QUERY_SCHEMA } from '#common/http/instant.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

const Uuid = () => Param('uuid', UuidPipe);

@ApiTags('Accounts')
@Controller('wallet/accounts')
@ErrorResponses('Unknown account (or not reachable by the caller)')
export class AccountsController {
  constructor(
    private readonly accounts: AccountsService,
    private readonly accountLimits: AccountLimitsService,
    private readonly accountFees: AccountFeesService,
    private readonly statements: StatementService,
  ) {}

  @Post()
  @AuthEither()
  @ApiOperation({
    summary: 'Open a wallet account for a user or company (issues a CVU and an alias)',
    operationId: 'createAccount',
    description:
      'Opened with an application token the account is ACTIVE; opened with a user token it is PENDING until the ' +
      'application sets it ACTIVE (the user chose its limits and fee).',
  })
  @ApiCreatedResponse({ type: AccountInfoDto })
  create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: CreateAccountDto,
  ): Promise<OwnerAccountView> {
    return this.accounts.create(principal, body);
  }

  @Get(':uuid')
  @AuthEither()
  @ApiOperation({ summary: 'An account', operationId: 'getAccount' })
  @ApiOkResponse({ type: AccountInfoDto })
  get(@CurrentPrincipal() principal: Principal, @Uuid() uuid: string): Promise<OwnerAccountView> {
    return this.accounts.get(principal, uuid);
  }

  @Patch(':uuid')
  @AuthEither()
  @ApiOperation({
    summary: 'Modify an account (status changes follow the state machine: docs/decisions/0011)',
    operationId: 'modifyAccount',
  })
  @ApiOkResponse({ type: AccountInfoDto })
  @ApiForbidden('INVALID_STATE: a status change the state machine does not allow')
  modify(
    @CurrentPrincipal() principal: Principal,
    @Uuid() uuid: string,
    @Body() body: ModifyAccountDto,
  ): Promise<OwnerAccountView> {
    return this.accounts.modify(principal, uuid, body);
  }

  @Delete(':uuid')
  @AuthEither()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Delete an account (it is kept in a deleted state; its CVU is never reused)',
    operationId: 'deleteAccount',
  })
  @ApiOkResponse({ type: MessageResponseDto })
  @ApiForbidden('INVALID_STATE: it holds money or has transfers in flight')
  remove(@CurrentPrincipal() principal: Principal, @Uuid() uuid: string): Promise<{ message: string }> {
    return this.accounts.remove(principal, uuid);
  }

  @Patch(':uuid/alias')
  @AuthEither()
  @ApiOperation({ summary: 'Change the alias (unique, case-insensitive)', operationId: 'updateAccountAlias' })
  @ApiOkResponse({ type: AccountInfoDto })
  changeAlias(
    @CurrentPrincipal() principal: Principal,
    @Uuid() uuid: string,
    @Body() body: UpdateAccountAliasDto,
  ): Promise<OwnerAccountView> {
    return this.accounts.changeAlias(principal, uuid, body.newAlias);
  }

  @Get(':uuid/balance')
  @AuthEither()
  @ApiOperation({
    summary: 'The balance available; with `at`, the balance at that instant (docs/decisions/0030)',
    operationId: 'getAccountBalance',
  })
  @ApiQuery({
    name: 'at',
    required: false,
    description: `${STATEMENT_AT_DESCRIPTION}. Before the account existed: 0; in the future: the balance now`,
    schema: DATE_TIME_QUERY_SCHEMA,
  })
  @ApiOkResponse({ type: BalanceResponseDto })
  balance(
    @CurrentPrincipal() principal: Principal,
    @Uuid() uuid: string,
    @Query('at') at?: string,
  ): Promise<BalanceResponseDto> {
    return at === undefined
      ? this.accounts.balance(principal, uuid)
      : this.statements.balanceAt(principal, uuid, at);
  }

  @Get(':uuid/statement')
  @AuthEither()
  @UseInterceptors(StatementInterceptor)
  @ApiOperation({
    summary:
      'The statement of the period (from, to]: opening, movements with running balance, closing, totals',
    description:
      `JSON, or CSV with \`Accept: text/csv\` (RFC 4180, header row, exact decimals, UTC). Paginated: ` +
      `the movements are paged (limit 1-${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}), the opening, closing ` +
      `and totals are the whole period's on every page: the cursor keeps page 1's period, \`to\` included ` +
      `when it was now, and page 1's figures; a posting made after page 1 shows from a new page 1. ` +
      `docs/decisions/0030, 0063, 0077.`,
    operationId: 'getAccountStatement',
  })
  @ApiQuery({
    name: 'from',
    required: false,
    description: `${STATEMENT_AT_DESCRIPTION}; default 1970-01-01T00:00:00Z (the whole history)`,
    schema: DATE_TIME_QUERY_SCHEMA,
  })
  @ApiQuery({
    name: 'to',
    required: false,
    description: `${STATEMENT_AT_DESCRIPTION}; not before from; default now`,
    schema: DATE_TIME_QUERY_SCHEMA,
  })
  @ApiQuery({
    name: 'limit',
    required: false,
    description: `movements per page, 1-${MAX_PAGE_SIZE}`,
    schema: PAGE_LIMIT_SCHEMA,
  })
  @ApiQuery({
    name: 'cursor',
    required: false,
    description:
      `the ${NEXT_CURSOR_HEADER} response header of the previous page (absent on the last page). Signed by the ` +
      `service, it holds the account, page 1's from and to (now, when to was left out) and page 1's figures: a ` +
      `from or to given with it must name the same instant, one left out is page 1's; otherwise, and for a ` +
      `cursor changed in any way, of another account, or signed with a key retired since, 400 at cursor (ask ` +
      `for page 1 again)`,
    schema: CURSOR_SCHEMA,
  })
  // The CSV on the 200 only: the errors stay JSON (ApiProduces would retype them all).
  @ApiExtraModels(StatementResponseDto)
  @ApiOkResponse({
    description: 'JSON, or CSV with `Accept: text/csv`',
    content: {
      'application/json': { schema: { $ref: getSchemaPath(StatementResponseDto) } },
      'text/csv': {
        schema: { type: 'string', description: 'RFC 4180, CRLF line ends, a header row' },
        example: `${CSV_HEADER.join(',')}\r\n`,
      },
    },
    headers: {
      [NEXT_CURSOR_HEADER]: {
        description: 'the cursor of the next page (absent on the last page)',
        schema: { type: 'string' },
      },
    },
  })
  statement(
    @CurrentPrincipal() principal: Principal,
    @Uuid() uuid: string,
    @Query() query: StatementQueryDto,
  ): Promise<StatementPage> {
    return this.statements.statement(principal, uuid, query);
  }

  @Post(':uuid/balance')
  @AuthClient()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Set the balance (the difference is posted as an adjustment entry)',
    operationId: 'setAccountBalance',
  })
  @ApiOkResponse({ type: MessageResponseDto })
  setBalance(
    @CurrentPrincipal() principal: Principal,
    @Uuid() uuid: string,
    @Body() body: SetBalanceDto,
  ): Promise<{ message: string }> {
    return this.accounts.setBalance(principal, uuid, body.balance);
  }

  @Patch(':uuid/balance')
  @AuthClient()
  @ApiOperation({
    summary: 'Set the balance (the difference is posted as an adjustment entry)',
    operationId: 'updateAccountBalance',
  })
  @ApiOkResponse({ type: MessageResponseDto })
  patchBalance(
    @CurrentPrincipal() principal: Principal,
    @Uuid() uuid: string,
    @Body() body: SetBalanceDto,
  ): Promise<{ message: string }> {
    return this.accounts.setBalance(principal, uuid, body.balance);
  }

  @Get(':uuid/limits')
  @AuthClient()
  @ApiOperation({ summary: 'Deposit and withdraw limits', operationId: 'getAccountLimits' })
  @ApiOkResponse({ type: LimitsResponseDto })
  limits(@CurrentPrincipal() principal: Principal, @Uuid() uuid: string): Promise<LimitsResponseDto> {
    return this.accountLimits.limits(principal, uuid);
  }

  @Post(':uuid/limits')
  @AuthClient()
  @HttpCode(200)
  @ApiOperation({ summary: 'Set the limits', operationId: 'setAccountLimits' })
  @ApiOkResponse({ type: StatusMessageResponseDto })
  setLimits(
    @CurrentPrincipal() principal: Principal,
    @Uuid() uuid: string,
    @Body() body: SetLimitsDto,
  ): Promise<{ status: number; message: string }> {
    return this.accountLimits.setLimits(principal, uuid, body);
  }

  @Patch(':uuid/limits')
  @AuthClient()
  @ApiOperation({ summary: 'Set the limits', operationId: 'updateAccountLimits' })
  @ApiOkResponse({ type: StatusMessageResponseDto })
  patchLimits(
    @CurrentPrincipal() principal: Principal,
    @Uuid() uuid: string,
    @Body() body: SetLimitsDto,
  ): Promise<{ status: number; message: string }> {
    return this.accountLimits.setLimits(principal, uuid, body);
  }

  @Get(':uuid/fees')
  @AuthClient()
  @ApiOperation({
    summary: 'The fee charged per movement (FIXED amount or PERCENTAGE)',
    operationId: 'getAccountFees',
  })
  @ApiOkResponse({ type: FeesResponseDto })
  fees(@CurrentPrincipal() principal: Principal, @Uuid() uuid: string): Promise<FeesResponseDto> {
    return this.accountFees.fees(principal, uuid);
  }

  @Patch(':uuid/fees')
  @AuthClient()
  @ApiOperation({ summary: 'Set the fee (feeType FIXED or PERCENTAGE)', operationId: 'updateAccountFees' })
  @ApiOkResponse({ type: StatusMessageResponseDto })
  setFees(
    @CurrentPrincipal() principal: Principal,
    @Uuid() uuid: string,
    @Body() body: SetFeesDto,
  ): Promise<{ status: number; message: string }> {
    return this.accountFees.setFees(principal, uuid, body);
  }

  @Get(':uuid/operado')
  @AuthClient()
  @ApiOperation({
    summary: 'Deposited and withdrawn this month and this year (OPERATIONS_TIME_ZONE calendar)',
    operationId: 'getAccountOperado',
  })
  @ApiOkResponse({ type: OperadoResponseDto })
  operado(@CurrentPrincipal() principal: Principal, @Uuid() uuid: string): Promise<OperadoResponseDto> {
    return this.accountLimits.operado(principal, uuid);
  }

  @Get(':uuid/fulloperado')
  @AuthClient()
  @ApiOperation({
    summary: 'The operated amounts (same fields as operado)',
    operationId: 'getAccountFullOperado',
  })
  @ApiOkResponse({ type: FullOperadoResponseDto })
  fullOperado(@CurrentPrincipal() principal: Principal, @Uuid() uuid: string): Promise<OperadoResponseDto> {
    return this.accountLimits.operado(principal, uuid);
  }
}
