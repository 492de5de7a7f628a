import { Body, Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { ThrottlerGuard } from '@nestjs/throttler';
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
  @UseGuards(ThrottlerGuard)
  @HttpCode(200)
  @ApiOperation({ summary: 'Exchange a signed client assertion for an access token (client credentials)' })
  @ApiOkResponse({ type: TokenResponseDto })
  @ApiBadRequestResponse({ type: TokenErrorDto })
  @ApiUnauthorizedResponse({ type: TokenErrorDto })
  token(@Body() body: TokenRequestDto): Promise<TokenResponseDto> {
    return this.tokens.issue(body);
  }
}
