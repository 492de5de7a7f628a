import { applyDecorators, Controller, HttpCode, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiExtraModels,
  ApiOkResponse,
  ApiOperation,
  ApiPayloadTooLargeResponse,
  ApiTooManyRequestsResponse,
  ApiTags,
  ApiUnauthorizedResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { Public } from '#common/auth/auth.decorator.js';
import { UseErrorStyle } from '#common/errors/error-style.js';
import { AcceptsFormBody } from '#common/http/form-body.js';
import {
  OAuthErrorDto,
  OAuthTokenFormDto,
  OAuthTokenResponseDto,
  TokenErrorDto,
  TokenRequestDto,
  TokenResponseDto,
} from './dto/token.dto.js';
import { TokenRequestBody, type TokenRequest } from './token-request.js';
import { TokenService } from './token.service.js';

type Model = new (...args: never[]) => unknown;

/** Either shape of an answer: the interface's for a JSON request, RFC 6749's for a form. */
const eitherOf = (json: Model, form: Model, description: string) => ({
  description,
  schema: { oneOf: [{ $ref: getSchemaPath(json) }, { $ref: getSchemaPath(form) }] },
});

const errors = (description: string) => eitherOf(TokenErrorDto, OAuthErrorDto, description);

/** Public, JSON or form (docs/decisions/0024), 200, both shapes documented. */
const TokenEndpoint = (summary: string) =>
  applyDecorators(
    Public(),
    AcceptsFormBody(),
    HttpCode(200),
    ApiExtraModels(
      TokenRequestDto,
      OAuthTokenFormDto,
      TokenResponseDto,
      OAuthTokenResponseDto,
      TokenErrorDto,
      OAuthErrorDto,
    ),
    ApiOperation({
      summary,
      description:
        'A JSON body (the interface) is answered with TokenResponse and the token error body; a form ' +
        '(RFC 6749 §4.4 with an RFC 7523 client assertion, as standard OAuth 2.0 clients send it) with ' +
        'RFC 6749 §5.1 and §5.2. The assertion rules are the same for both.',
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: { $ref: getSchemaPath(TokenRequestDto) } },
          'application/x-www-form-urlencoded': { schema: { $ref: getSchemaPath(OAuthTokenFormDto) } },
        },
      },
    }),
    ApiOkResponse(eitherOf(TokenResponseDto, OAuthTokenResponseDto, 'The access token')),
    ApiBadRequestResponse(errors('Invalid request, unsupported grant type or scope')),
    ApiUnauthorizedResponse(errors('The client assertion was refused (invalid_client)')),
    ApiPayloadTooLargeResponse(errors('Body over BODY_LIMIT')),
    ApiTooManyRequestsResponse(errors('TOKEN_RATE_LIMIT_PER_MINUTE exceeded')),
  );

@ApiTags('Token')
@Controller('oauth')
@UseErrorStyle('oauth')
export class TokenController {
  constructor(private readonly tokens: TokenService) {}

  @Post('app/token')
  @TokenEndpoint('Exchange a signed client assertion for an access token (client credentials)')
  token(@TokenRequestBody() request: TokenRequest): Promise<TokenResponseDto | OAuthTokenResponseDto> {
    return this.answer(request);
  }

  @Post('token')
  @TokenEndpoint('The same, at the token URL the OAuth2ClientCredentials scheme declares')
  tokenAtSchemeUrl(
    @TokenRequestBody() request: TokenRequest,
  ): Promise<TokenResponseDto | OAuthTokenResponseDto> {
    return this.answer(request);
  }

  private async answer(request: TokenRequest): Promise<TokenResponseDto | OAuthTokenResponseDto> {
    if (!request.form) return this.tokens.issue(request.body);
    const issued = await this.tokens.issueForForm(request.body);
    return { access_token: issued.accessToken, token_type: 'Bearer', expires_in: issued.expiresIn };
  }
}
