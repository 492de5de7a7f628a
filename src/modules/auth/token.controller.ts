import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiOkResponse,
  ApiOperation,
  ApiPayloadTooLargeResponse,
  ApiTooManyRequestsResponse,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { Public } from '../../common/auth/auth.decorator.js';
import { UseErrorStyle } from '../../common/errors/error-style.js';
import { TokenErrorDto, TokenRequestDto, TokenResponseDto } from './dto/token.dto.js';
import { TokenService } from './token.service.js';

@ApiTags('Token')
@Controller('oauth/app')
@UseErrorStyle('oauth')
export class TokenController {
  constructor(private readonly tokens: TokenService) {}

  @Post('token')
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Exchange a signed client assertion for an access token (client credentials)' })
  @ApiOkResponse({ type: TokenResponseDto })
  @ApiBadRequestResponse({ type: TokenErrorDto })
  @ApiUnauthorizedResponse({ type: TokenErrorDto })
  @ApiPayloadTooLargeResponse({ type: TokenErrorDto, description: 'Body over BODY_LIMIT' })
  @ApiTooManyRequestsResponse({ type: TokenErrorDto, description: 'TOKEN_RATE_LIMIT_PER_MINUTE exceeded' })
  token(@Body() body: TokenRequestDto): Promise<TokenResponseDto> {
    return this.tokens.issue(body);
  }
}
