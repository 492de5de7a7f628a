import { Module } from '@nestjs/common';
import { SigningKeysService } from './signing-keys.service.js';

/** The service's signing keys, for every process that signs or verifies (API, worker, CLI). */
@Module({
  providers: [SigningKeysService],
  exports: [SigningKeysService],
})
export class SigningKeysModule {}
