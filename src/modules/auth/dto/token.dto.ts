import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsNotEmpty, IsOptional, IsString } from 'class-validator';
import { MaxLength } from '#common/http/validators.js';

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

  @ApiProperty({ enum: ['client_credentials'] })
  @IsString()
  @IsNotEmpty()
  grantType: string;
}

export class TokenResponseDto {
  @ApiProperty({ enum: ['Bearer'] })
  type: 'Bearer';

  @ApiProperty()
  accessToken: string;

  @ApiProperty({ type: 'integer', description: 'Lifetime of the access token in seconds' })
  expiresIn: number;
}

export class TokenErrorItemDto {
  @ApiProperty() path: string;
  @ApiProperty() message: string;
  @ApiProperty({ enum: ['required', 'invalid', 'notfound', 'duplicate'] }) type: string;
}

export class TokenErrorDto {
  @ApiProperty({
    description: 'OAuth 2.0 error code (invalid_request, invalid_client, unsupported_grant_type)',
  })
  errorId: string;

  @ApiProperty({ type: 'integer', description: 'HTTP status code' })
  code: number;

  @ApiProperty()
  message: string;

  @ApiProperty({ type: [TokenErrorItemDto], required: false, description: 'Present on 400' })
  detail?: TokenErrorItemDto[];
}

/** RFC 7523 §2.2: the client assertion type of a JWT client assertion. */
export const JWT_BEARER_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * The form a standard OAuth 2.0 client sends (RFC 6749 §4.4.2 with RFC 7523 client authentication). Other
 * parameters are ignored (RFC 6749 §3.2); one sent without a value counts as absent (§3.1).
 */
export class OAuthTokenFormDto {
  @ApiProperty({ enum: ['client_credentials'] })
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
export class OAuthTokenResponseDto {
  @ApiProperty()
  access_token: string;

  @ApiProperty({ enum: ['Bearer'] })
  token_type: 'Bearer';

  @ApiProperty({ description: 'Lifetime of the access token in seconds' })
  expires_in: number;
}

/** RFC 6749 §5.2, the error answer to a form. */
export class OAuthErrorDto {
  @ApiProperty({
    description:
      'invalid_request, invalid_client, unsupported_grant_type, invalid_scope; rate_limited on 429',
  })
  error: string;

  @ApiProperty({ description: 'What was wrong, in printable ASCII' })
  error_description: string;
}
