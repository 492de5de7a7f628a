import { applyDecorators, Controller, HttpCode, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConsumes,
  ApiOkResponse,
  ApiOperation,
  ApiPayloadTooLargeResponse,
  ApiTooManyRequestsResponse,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { Public } from '#common/auth/auth.decorator.js';
import { UseErrorStyle } from '#common/errors/error-style.js';
import { AcceptsFormBody } from '#common/http/form-body.js';
import { RETRY_AFTER } from '#common/http/openapi.js';
import {
  OAuthErrorDto,
  OAuthTokenFormDto,
  OAuthTokenResponseDto,
  TokenErrorDto,
  TokenRequestDto,
  TokenResponseDto,
  TokenValidationErrorDto,
} from './dto/token.dto.js';
import { TokenRequestBody, type TokenRequest } from './token-request.js';
import { TokenService } from './token.service.js';

type Model = new (...args: never[]) => unknown;

/** Public, a JSON body or a form (docs/decisions/0024), 200. */
const TokenEndpoint = () => applyDecorators(Public(), AcceptsFormBody(), HttpCode(200));

/**
 * What one route documents: one request body and the answers to it. OpenAPI cannot tie an answer's shape to the
 * request's content type, so each route documents one body (decision 0069): /oauth/app/token the interface's JSON,
 * /oauth/token the RFC 6749 form its security scheme names. Both routes take both.
 */
const TokenDocs = (docs: {
  summary: string;
  operationId: string;
  description: string;
  body: Model;
  form: boolean;
  ok: Model;
  badRequest: Model;
  error: Model;
}) =>
  applyDecorators(
    ApiOperation({ summary: docs.summary, operationId: docs.operationId, description: docs.description }),
    ...(docs.form ? [ApiConsumes('application/x-www-form-urlencoded')] : []),
    ApiBody({ type: docs.body }),
    ApiOkResponse({ type: docs.ok, description: 'The access token' }),
    ApiBadRequestResponse({
      type: docs.badRequest,
      description: 'Invalid request, unsupported grant type or scope',
    }),
    ApiUnauthorizedResponse({
      type: docs.error,
      description: 'The client assertion was refused (invalid_client)',
    }),
    ApiPayloadTooLargeResponse({ type: docs.error, description: 'Body over BODY_LIMIT' }),
    ApiTooManyRequestsResponse({
      type: docs.error,
      description: 'TOKEN_RATE_LIMIT_PER_MINUTE exceeded (rate_limited)',
      headers: { 'Retry-After': RETRY_AFTER },
    }),
  );

@ApiTags('Token')
@Controller('oauth')
@UseErrorStyle('oauth')
export class TokenController {
  constructor(private readonly tokens: TokenService) {}

  @Post('app/token')
  @TokenEndpoint()
  @TokenDocs({
    summary: 'Exchange a signed client assertion for an access token (client credentials)',
    operationId: 'issueToken',
    description:
      "The interface's JSON body, answered with TokenResponse or the token error body. The route also takes the " +
      'RFC 6749 form of POST /oauth/token and answers it as that route does.',
    body: TokenRequestDto,
    form: false,
    ok: TokenResponseDto,
    badRequest: TokenValidationErrorDto,
    error: TokenErrorDto,
  })
  token(@TokenRequestBody() request: TokenRequest): Promise<TokenResponseDto | OAuthTokenResponseDto> {
    return this.answer(request);
  }

  @Post('token')
  @TokenEndpoint()
  @TokenDocs({
    summary:
      'The same, at the token URL the OAuth2ClientCredentials scheme declares, for standard OAuth 2.0 clients',
    operationId: 'issueOAuthToken',
    description:
      'The form of RFC 6749 §4.4 with an RFC 7523 client assertion (`private_key_jwt`), answered as RFC 6749 §5.1 ' +
      'and §5.2 say, with `Pragma: no-cache`. The assertion rules are those of POST /oauth/app/token, whose JSON ' +
      'body this route also takes and answers as that route does.',
    body: OAuthTokenFormDto,
    form: true,
    ok: OAuthTokenResponseDto,
    badRequest: OAuthErrorDto,
    error: OAuthErrorDto,
  })
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
