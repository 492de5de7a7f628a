import { Controller, Get, Header, Inject } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '#common/auth/auth.decorator.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import {
  AuthorizationServerMetadataDto,
  authorizationServerMetadata,
} from './dto/authorization-server-metadata.dto.js';

@ApiTags('Token')
@Controller('.well-known')
export class AuthorizationServerMetadataController {
  private readonly document: AuthorizationServerMetadataDto;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.document = authorizationServerMetadata(config.publicBaseUrl);
  }

  @Get('oauth-authorization-server')
  @Public()
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({
    summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
    operationId: 'getAuthorizationServerMetadata',
    description:
      "Also served at RFC 8414's own address, the suffix before the issuer's path: " +
      '`/.well-known/oauth-authorization-server/v1` (with the prefix of `PUBLIC_BASE_URL`).',
  })
  @ApiOkResponse({ type: AuthorizationServerMetadataDto })
  metadata(): AuthorizationServerMetadataDto {
    return this.document;
  }
}
