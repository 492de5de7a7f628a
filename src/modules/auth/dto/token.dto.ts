import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsNotEmpty, IsOptional, IsString } from 'class-validator';
import { ErrorItemDto } from '#common/http/openapi.js';
import { MaxLength } from '#common/http/validators.js';

/** The grant type and token type of both token bodies: one component each. */
export const GRANT_TYPE_ENUM = { enum: ['client_credentials'], enumName: 'GrantType' };
const TOKEN_TYPE_ENUM = { enum: ['Bearer'], enumName: 'TokenType' };

/** The interface's token request (POST /oauth/app/token). */
@ApiSchema({ name: 'TokenRequest' })
export class TokenRequestDto {
  @ApiProperty({ description: 'The application id (equal to its clientId)', format: 'uuid' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  appId: string;

  @ApiProperty({ description: 'The client assertion: a JWT signed ES256 with a registered key (RFC 7523)' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(8192)
  token: string;

  @ApiProperty(GRANT_TYPE_ENUM)
  @IsString()
  @IsNotEmpty()
  grantType: string;
}

@ApiSchema({ name: 'TokenResponse' })
export class TokenResponseDto {
  @ApiProperty(TOKEN_TYPE_ENUM)
  type: 'Bearer';

  @ApiProperty()
  accessToken: string;

  @ApiProperty({ type: 'integer', description: 'Lifetime of the access token in seconds' })
  expiresIn: number;
}

/** The interface's token error body (401, 413, 429). */
@ApiSchema({ name: 'TokenError' })
export class TokenErrorDto {
  @ApiProperty({
    description: 'OAuth 2.0 error code (invalid_request, invalid_client, unsupported_grant_type)',
  })
  errorId: string;

  @ApiProperty({ type: 'integer', description: 'HTTP status code' })
  code: number;

  @ApiProperty()
  message: string;
}

/** The token error body of a 400: with the refused parts. */
@ApiSchema({ name: 'TokenValidationError' })
export class TokenValidationErrorDto extends TokenErrorDto {
  @ApiProperty({ type: [ErrorItemDto] })
  detail: ErrorItemDto[];
}

/** RFC 7523 §2.2: the client assertion type of a JWT client assertion. */
export const JWT_BEARER_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * The form a standard OAuth 2.0 client sends (RFC 6749 §4.4.2 with RFC 7523 client authentication). Other
 * parameters are ignored (RFC 6749 §3.2); one sent without a value counts as absent (§3.1).
 */
@ApiSchema({ name: 'OAuthTokenRequest' })
export class OAuthTokenFormDto {
  @ApiProperty(GRANT_TYPE_ENUM)
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  grant_type: string;

  @ApiPropertyOptional({
    description: 'The application id; when sent, it must equal the assertion’s iss and sub',
    format: 'uuid',
  })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  client_id?: string;

  @ApiPropertyOptional({ enum: [JWT_BEARER_ASSERTION_TYPE] })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  client_assertion_type?: string;

  @ApiPropertyOptional({
    description:
      'The client assertion: a JWT signed ES256 with a registered key (RFC 7523), the JSON body’s `token`',
  })
  @IsOptional()
  @IsString()
  @MaxLength(8192)
  client_assertion?: string;

  @ApiPropertyOptional({ description: 'The service defines no scopes: absent or empty only' })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  scope?: string;
}

/** RFC 6749 §5.1, the answer to a form. */
@ApiSchema({ name: 'OAuthTokenResponse' })
export class OAuthTokenResponseDto {
  @ApiProperty()
  access_token: string;

  @ApiProperty(TOKEN_TYPE_ENUM)
  token_type: 'Bearer';

  @ApiProperty({ type: 'integer', description: 'Lifetime of the access token in seconds' })
  expires_in: number;
}

/** RFC 6749 §5.2, the error answer to a form. */
@ApiSchema({ name: 'OAuthError' })
export class OAuthErrorDto {
  @ApiProperty({
    description:
      'invalid_request, invalid_client, unsupported_grant_type, invalid_scope; rate_limited on 429',
  })
  error: string;

  @ApiProperty({ description: 'What was wrong, in printable ASCII' })
  error_description: string;
}
