import { Injectable } from '@nestjs/common';
import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { printJson, readKeyFile, requireOption, unknownSubcommand } from '#common/cli/output.js';
import { AppsService } from '../apps.service.js';
import type { ApplicationStatus } from '../entities/application.entity.js';
import { cliActor } from '#modules/audit/audit-trail.js';

interface AppsOptions {
  name?: string;
  publicKey?: string;
  webhookUrl?: string;
  url?: string;
  appId?: string;
  keyId?: string;
}

/**
 * Each subcommand declares the options it reads and no other, so its help lists only those and commander refuses
 * any other flag (`apps create --url X` was accepted and created the application without a webhook when every
 * subcommand shared all six options).
 */
@Injectable()
abstract class AppsSubCommand extends CommandRunner {
  constructor(protected readonly apps: AppsService) {
    super();
  }
}

/** A subcommand about one application (`--app-id`). */
abstract class OneAppSubCommand extends AppsSubCommand {
  @Option({ flags: '--app-id <id>', description: 'application id' })
  parseAppId(value: string): string {
    return value;
  }
}

const PUBLIC_KEY_OPTION = {
  flags: '--public-key <file>',
  description: 'EC P-256 public key file, PEM (SPKI) or JWK',
};

@SubCommand({ name: 'create', description: 'register an application with its first public key' })
export class AppsCreateCommand extends AppsSubCommand {
  @Option({ flags: '--name <name>', description: 'application name' })
  parseName(value: string): string {
    return value;
  }

  @Option(PUBLIC_KEY_OPTION)
  parsePublicKey(value: string): string {
    return value;
  }

  @Option({ flags: '--webhook-url <url>', description: 'URL that receives webhooks (optional)' })
  parseWebhookUrl(value: string): string {
    return value;
  }

  async run(_args: string[], options: AppsOptions): Promise<void> {
    const name = requireOption(options.name, '--name');
    const publicKey = await readKeyFile(requireOption(options.publicKey, '--public-key'));
    printJson(
      await this.apps.create({ name, publicKey, webhookUrl: options.webhookUrl }, cliActor('apps create')),
    );
  }
}

@SubCommand({ name: 'list', description: 'list applications with their keys' })
export class AppsListCommand extends AppsSubCommand {
  async run(): Promise<void> {
    printJson(await this.apps.list());
  }
}

@SubCommand({ name: 'set-webhook', description: "set an application's webhook URL" })
export class AppsSetWebhookCommand extends OneAppSubCommand {
  @Option({ flags: '--url <url>', description: 'URL that receives webhooks' })
  parseUrl(value: string): string {
    return value;
  }

  async run(_args: string[], options: AppsOptions): Promise<void> {
    printJson(
      await this.apps.setWebhook(
        requireOption(options.appId, '--app-id'),
        requireOption(options.url, '--url'),
        cliActor('apps set-webhook'),
      ),
    );
  }
}

@SubCommand({ name: 'add-key', description: 'register another public key for an application' })
export class AppsAddKeyCommand extends OneAppSubCommand {
  @Option(PUBLIC_KEY_OPTION)
  parsePublicKey(value: string): string {
    return value;
  }

  async run(_args: string[], options: AppsOptions): Promise<void> {
    const appId = requireOption(options.appId, '--app-id');
    const publicKey = await readKeyFile(requireOption(options.publicKey, '--public-key'));
    printJson(await this.apps.addKey(appId, publicKey, cliActor('apps add-key')));
  }
}

@SubCommand({ name: 'revoke-key', description: "revoke one of an application's keys" })
export class AppsRevokeKeyCommand extends OneAppSubCommand {
  @Option({ flags: '--key-id <kid>', description: 'keyId (RFC 7638 thumbprint)' })
  parseKeyId(value: string): string {
    return value;
  }

  async run(_args: string[], options: AppsOptions): Promise<void> {
    printJson(
      await this.apps.revokeKey(
        requireOption(options.appId, '--app-id'),
        requireOption(options.keyId, '--key-id'),
        cliActor('apps revoke-key'),
      ),
    );
  }
}

/**
 * `apps disable --app-id ID`, `apps enable --app-id ID`: the application's status, as JSON {appId, status}. The id is
 * an option, as in every other `apps` command of the operator contract.
 */
abstract class AppStatusSubCommand extends OneAppSubCommand {
  protected abstract readonly status: ApplicationStatus;

  async run(_args: string[], options: AppsOptions): Promise<void> {
    const command = this.status === 'disabled' ? 'apps disable' : 'apps enable';
    const appId = requireOption(options.appId, '--app-id');
    printJson(await this.apps.setStatus(appId, this.status, cliActor(command)));
  }
}

@SubCommand({
  name: 'disable',
  description:
    "refuse the application's access tokens, user tokens and token requests (everywhere within AUTH_CACHE_MS); its data, money and webhooks stay",
})
export class AppsDisableCommand extends AppStatusSubCommand {
  protected readonly status = 'disabled';
}

@SubCommand({
  name: 'enable',
  description: 'accept a disabled application again (its keys as they are)',
})
export class AppsEnableCommand extends AppStatusSubCommand {
  protected readonly status = 'active';
}

@Command({
  name: 'apps',
  description: 'administer client applications',
  subCommands: [
    AppsCreateCommand,
    AppsListCommand,
    AppsSetWebhookCommand,
    AppsAddKeyCommand,
    AppsRevokeKeyCommand,
    AppsDisableCommand,
    AppsEnableCommand,
  ],
})
export class AppsCommand extends CommandRunner {
  async run(args: string[]): Promise<void> {
    unknownSubcommand(this.command, args);
  }
}

export const APPS_COMMANDS = [
  AppsCommand,
  AppsCreateCommand,
  AppsListCommand,
  AppsSetWebhookCommand,
  AppsAddKeyCommand,
  AppsRevokeKeyCommand,
  AppsDisableCommand,
  AppsEnableCommand,
];
