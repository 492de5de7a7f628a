import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { JWK } from 'jose';
import { Public } from '#common/auth/auth.decorator.js';
import { SigningKeysService } from './signing-keys.service.js';

@ApiTags('Token')
@Controller('.well-known')
export class JwksController {
  constructor(private readonly keys: SigningKeysService) {}

  @Get('jwks.json')
  @Public()
  // Short enough that a verifier honouring it, and then jose's 30 s refetch cooldown, sees a rotated key before it
  // signs (SIGNING_KEY_ACTIVATION_SECONDS, 120 by default: decision 0006's amendment).
  @Header('Cache-Control', 'public, max-age=60')
  @ApiOperation({
    summary: 'Public keys that sign access tokens and webhooks (JWKS)',
    operationId: 'getJwks',
  })
  @ApiOkResponse({
    description: 'A JSON Web Key Set',
    schema: {
      type: 'object',
      properties: {
        keys: {
          type: 'array',
          items: {
            type: 'object',
            description: 'an EC P-256 public key (ES256)',
            properties: {
              kty: { type: 'string', enum: ['EC'] },
              crv: { type: 'string', enum: ['P-256'] },
              x: { type: 'string' },
              y: { type: 'string' },
              kid: { type: 'string' },
              alg: { type: 'string', enum: ['ES256'] },
              use: { type: 'string', enum: ['sig'] },
            },
            required: ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'],
          },
        },
      },
      required: ['keys'],
    },
  })
  jwks(): Promise<{ keys: JWK[] }> {
    return this.keys.jwks();
  }
}
