import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { CommandFactory } from 'nest-commander';
import { leaveDatabase, prepareRuntime } from './bootstrap.js';
import { describeError } from '#common/cli/output.js';
import { ExcessArgumentsRefusal } from '#common/cli/excess-arguments.js';
import { InfrastructureModule, type RuntimeOptions } from './infrastructure.module.js';
import { AppsModule } from '#modules/apps/apps.module.js';
import { APPS_COMMANDS } from '#modules/apps/commands/apps.command.js';
import { AuditModule } from '#modules/audit/audit.module.js';
import { AUDIT_COMMANDS } from '#modules/audit/commands/audit.command.js';
import { SigningKeysModule } from '#modules/auth/signing-keys.module.js';
import { KEYS_COMMANDS } from '#modules/auth/commands/keys.command.js';
import { WEBHOOKS_COMMANDS } from '#modules/webhooks/commands/webhooks.command.js';
import { WebhooksModule } from '#modules/webhooks/webhooks.module.js';
import { LEDGER_COMMANDS } from '#modules/wallet/commands/ledger.command.js';
import { TRANSFERS_COMMANDS } from '#modules/transfers/commands/transfers.command.js';
import { TransfersModule } from '#modules/transfers/transfers.module.js';
import { WalletReadModule } from '#modules/wallet/wallet-read.module.js';
import { WalletModule } from '#modules/wallet/wallet.module.js';
import { DocumentStorageModule } from '#modules/kyc/documents/document-storage.module.js';
import { DOCUMENTS_COMMANDS } from '#modules/kyc/commands/documents.command.js';

/** Admin commands: JSON on stdout, logs and errors on stderr, non-zero exit on failure. */
@Module({})
class CliModule {
  static forRoot(options: RuntimeOptions): DynamicModule {
    return {
      module: CliModule,
      imports: [
        InfrastructureModule.forRoot(options),
        AppsModule,
        AuditModule,
        SigningKeysModule,
        WebhooksModule,
        // Users and companies come with the wallet (accounts' owners): they need OWNER_ACCOUNTS.
        WalletReadModule,
        WalletModule,
        TransfersModule,
        DocumentStorageModule,
      ],
      providers: [
        ExcessArgumentsRefusal,
        ...APPS_COMMANDS,
        ...AUDIT_COMMANDS,
        ...KEYS_COMMANDS,
        ...WEBHOOKS_COMMANDS,
        ...LEDGER_COMMANDS,
        ...TRANSFERS_COMMANDS,
        ...DOCUMENTS_COMMANDS,
      ],
    };
  }
}

/** Thrown from commander's exit hook so that usage errors and --help unwind through `finally` instead of exiting. */
class CommanderExit extends Error {
  constructor(readonly exitCode: number) {
    super('commander exit');
  }
}

async function main(): Promise<void> {
  const { config, database, logger } = await prepareRuntime('cli');
  // Commander exits directly on usage errors of subcommands (no exit hook there): prepareRuntime's exit handler
  // leaves the embedded server then.
  const fail = (error: unknown) => {
    if (error instanceof CommanderExit) {
      process.exitCode = error.exitCode;
      return;
    }
    process.stderr.write(`error: ${describeError(error)}\n`);
    process.exitCode = 1;
  };
  try {
    await CommandFactory.run(CliModule.forRoot({ config, database, role: 'cli' }), {
      logger: false,
      cliName: 'wallet',
      errorHandler: (error: Error & { exitCode?: number; code?: string }) => {
        // commander reports usage problems and --help this way (it has printed them already); 0 for --help.
        throw new CommanderExit(typeof error.exitCode === 'number' ? error.exitCode : 1);
      },
      serviceErrorHandler: fail,
    });
  } catch (error) {
    fail(error);
  } finally {
    await leaveDatabase(database, logger, { shortLived: true });
  }
  process.exit(process.exitCode ?? 0);
}

await main();
