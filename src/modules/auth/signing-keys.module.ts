import { Module } from '@nestjs/common';
import { SigningKeyAuditService } from './signing-key-audit.service.js';
import { SigningKeysService } from './signing-keys.service.js';

/**
 * The service's signing keys, for every process that signs or verifies (API, worker, CLI), and their audit
 * trail (SigningKeyAuditService: the key changes of the CLI, and the catch-up at the API's start).
 */
@Module({
  providers: [SigningKeysService, SigningKeyAuditService],
  exports: [SigningKeysService, SigningKeyAuditService],
})
export class SigningKeysModule {}
