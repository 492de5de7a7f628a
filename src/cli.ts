import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { CommandFactory } from 'nest-commander';
import { prepareRuntime } from './bootstrap.js';
import { describeError } from './common/cli/output.js';
import { InfrastructureModule, type RuntimeOptions } from './infrastructure.module.js';
import { AppsModule } from './modules/apps/apps.module.js';
import { APPS_COMMANDS } from './modules/apps/commands/apps.command.js';
import { SigningKeysModule } from './modules/auth/signing-keys.module.js';
import { KEYS_COMMANDS } from './modules/auth/commands/keys.command.js';

/** Admin commands: JSON on stdout, logs and errors on stderr, non-zero exit on failure. */
@Module({})
class CliModule {
  static forRoot(options: RuntimeOptions): DynamicModule {
    return {
      module: CliModule,
      imports: [InfrastructureModule.forRoot(options), AppsModule, SigningKeysModule],
      providers: [...APPS_COMMANDS, ...KEYS_COMMANDS],
    };
  }
}

async function main(): Promise<void> {
  const { config, database } = await prepareRuntime('cli');
  const fail = (error: unknown) => {
    process.stderr.write(`error: ${describeError(error)}\n`);
    process.exitCode = 1;
  };
  try {
    await CommandFactory.run(CliModule.forRoot({ config, database, role: 'cli' }), {
      logger: false,
      cliName: 'wallet',
      errorHandler: (error: Error & { exitCode?: number; code?: string }) => {
        // commander reports usage problems and --help this way.
        if (error.code === 'commander.helpDisplayed' || error.code === 'commander.help') return;
        if (error.code !== 'commander.version') process.exitCode = error.exitCode || 1;
      },
      serviceErrorHandler: fail,
    });
  } catch (error) {
    fail(error);
  } finally {
    await database.embedded?.stop();
  }
  process.exit(process.exitCode ?? 0);
}

await main();
