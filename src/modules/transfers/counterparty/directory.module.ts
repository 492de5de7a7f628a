import { Global, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { ALIAS_REGISTRY, type AliasRegistry } from '#modules/wallet/accounts/alias-registry.port.js';
import { COUNTERPARTY_DIRECTORY, type CounterpartyDirectory } from './counterparty-directory.port.js';
import { FixtureDirectory } from './fixture-directory.js';

/**
 * The directory of accounts at other institutions (the clearing house's registry; a fixture file here), and the
 * wallet's ALIAS_REGISTRY answered from it, so an account here never takes another institution's alias. Global:
 * the wallet reads the port without importing transfers (transfers → wallet), as kyc reads its owners.
 */
@Global()
@Module({
  providers: [
    {
      provide: COUNTERPARTY_DIRECTORY,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new FixtureDirectory(config.counterpartyDirectoryFile),
    },
    {
      provide: ALIAS_REGISTRY,
      inject: [COUNTERPARTY_DIRECTORY],
      useFactory: (directory: CounterpartyDirectory): AliasRegistry => ({
        takenElsewhere: async (alias) => (await directory.byAlias(alias)) !== undefined,
      }),
    },
  ],
  exports: [COUNTERPARTY_DIRECTORY, ALIAS_REGISTRY],
})
export class DirectoryModule {}
