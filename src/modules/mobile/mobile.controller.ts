import { applyDecorators, Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiExtraModels,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { UseErrorStyle } from '#common/errors/error-style.js';
import { RETRY_AFTER, ServiceUnavailableResponse } from '#common/http/openapi.js';
import { SimSwapRequestDto, SimSwapResponseDto } from './dto/sim-swap.dto.js';
import {
  SmsSendRequestDto,
  SmsSendResponseDto,
  SmsStatusNotFoundResponseDto,
  SmsStatusResponseDto,
} from './dto/sms.dto.js';
import { SimSwapService } from './sim-swap/sim-swap.service.js';
import { SmsService } from './sms/sms.service.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';
import { IdempotencyKey, IdempotencyKeyHeader } from '#common/http/idempotency-key.js';

const NO_ROUTES = { 'text/html': { schema: { type: 'string', example: 'NO ROUTES' } } } as const;
const LIMIT_RETRY_AFTER = {
  'Retry-After': {
    ...RETRY_AFTER,
    description: 'sent when a rate limit refused it: seconds until a place frees',
  },
};

/**
 * The interface's error rule 5: 400 and 401 are the text `NO ROUTES` as text/html. A route with rate limits sends
 * Retry-After with the 400 of a limit (decision 0058).
 */
const TextErrors = (badRequest: string, limited = false) =>
  applyDecorators(
    ApiBadRequestResponse({
      description: badRequest,
      content: NO_ROUTES,
      headers: limited ? LIMIT_RETRY_AFTER : undefined,
    }),
    ApiUnauthorizedResponse({
      description: 'Missing or invalid credentials: `NO ROUTES`',
      content: NO_ROUTES,
    }),
  );

/** SMS and SIM swap (`mobile` stands for the telecom provider). Thin: one service call per route. */
@ApiTags('Mobile')
@Controller('mobile')
@UseErrorStyle('text')
export class MobileController {
  constructor(
    private readonly sms: SmsService,
    private readonly simSwap: SimSwapService,
  ) {}

  @Post('sms')
  @AuthEither()
  @HttpCode(200)
  @ApiOperation({ summary: 'Send an SMS', operationId: 'sendSms' })
  @ApiOkResponse({ type: SmsSendResponseDto })
  @IdempotencyKeyHeader()
  @TextErrors(
    'Invalid request or Idempotency-Key, the key used with another message, no route to the destination, or a ' +
      'rate limit reached: `NO ROUTES`',
    true,
  )
  async send(
    @Body() body: SmsSendRequestDto,
    @CurrentPrincipal() principal: Principal,
    @IdempotencyKey() idempotencyKey?: string,
  ): Promise<SmsSendResponseDto> {
    const { messageId } = await this.sms.send(principal, body, idempotencyKey);
    return { message_id: messageId };
  }

  @Get('sms/:uuid')
  @AuthEither()
  @ApiOperation({
    summary: 'Delivery status of an SMS this application (or this user) sent',
    operationId: 'getSmsStatus',
  })
  @ApiExtraModels(SmsStatusResponseDto, SmsStatusNotFoundResponseDto)
  @ApiOkResponse({
    description: 'The status, or status UNKNOWN with empty strings for an id this caller never sent',
    schema: {
      oneOf: [
        { $ref: getSchemaPath(SmsStatusResponseDto) },
        { $ref: getSchemaPath(SmsStatusNotFoundResponseDto) },
      ],
    },
  })
  @TextErrors('The path parameter is not a uuid: `NO ROUTES`')
  status(
    @Param('uuid', UuidPipe)
    uuid: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<SmsStatusResponseDto | SmsStatusNotFoundResponseDto> {
    return this.sms.status(principal, uuid.toLowerCase());
  }

  @Post('simSwap')
  @AuthEither()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Whether the SIM of a phone number was swapped recently (CAMARA SIM Swap check)',
    operationId: 'checkSimSwap',
  })
  @ApiOkResponse({ type: SimSwapResponseDto })
  @TextErrors(
    'Invalid request, the provider cannot check this number, or a rate limit reached: `NO ROUTES`',
    true,
  )
  @ServiceUnavailableResponse(
    "The SIM swap provider failed (detail.checks; Retry-After 1 s, or the provider's own up to 60 s), or a " +
      'service the request needs is out of reach (detail.trackingId, Retry-After): a JSON error body',
  )
  async check(
    @Body() body: SimSwapRequestDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<SimSwapResponseDto> {
    const { message } = await this.simSwap.check(principal, body.phoneNumber);
    return { message };
  }
}
