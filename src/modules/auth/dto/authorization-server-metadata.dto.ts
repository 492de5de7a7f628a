import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { GRANT_TYPE_ENUM } from './token.dto.js';

/** RFC 8414 §2: what a standard OAuth 2.0 client needs to get a token here (docs/decisions/0024). */
@ApiSchema({ name: 'AuthorizationServerMetadata' })
export class AuthorizationServerMetadataDto {
  @ApiProperty({ description: '{base_url}: the iss of every access token' })
  issuer: string;

  @ApiProperty({ description: '{base_url}oauth/token' })
  token_endpoint: string;

  @ApiProperty({ description: '{base_url}.well-known/jwks.json: the keys that sign access tokens' })
  jwks_uri: string;

  @ApiProperty({ type: [String], ...GRANT_TYPE_ENUM })
  grant_types_supported: string[];

  @ApiProperty({ type: [String], enum: ['private_key_jwt'] })
  token_endpoint_auth_methods_supported: string[];

  @ApiProperty({ type: [String], enum: ['ES256'] })
  token_endpoint_auth_signing_alg_values_supported: string[];

  @ApiProperty({
    type: [String],
    description: 'Required by RFC 8414; empty: there is no authorization endpoint',
  })
  response_types_supported: string[];

  @ApiProperty({ description: '{base_url}docs: the OpenAPI document and its page' })
  service_documentation: string;
}

export function authorizationServerMetadata(baseUrl: string): AuthorizationServerMetadataDto {
  return {
    issuer: baseUrl,
    token_endpoint: `${baseUrl}oauth/token`,
    jwks_uri: `${baseUrl}.well-known/jwks.json`,
    grant_types_supported: ['client_credentials'],
    token_endpoint_auth_methods_supported: ['private_key_jwt'],
    token_endpoint_auth_signing_alg_values_supported: ['ES256'],
    response_types_supported: [],
    service_documentation: `${baseUrl}docs`,
  };
}
