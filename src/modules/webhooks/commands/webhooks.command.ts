import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { printJson, requireOption, unknownSubcommand, wholeNumberOption } from '#common/cli/output.js';
import { cliActor } from '#modules/audit/audit-trail.js';
import { MAX_LISTED_EVENTS, WebhooksService } from '../webhooks.service.js';

@SubCommand({ name: 'send-test', description: 'queue a webhook_test event for an application' })
export class WebhooksSendTestCommand extends CommandRunner {
  constructor(private readonly webhooks: WebhooksService) {
    super();
  }

  @Option({ flags: '--app-id <id>', description: 'application id' })
  parseAppId(value: string): string {
    return value;
  }

  async run(_args: string[], options: { appId?: string }): Promise<void> {
    printJson(
      await this.webhooks.sendTest(requireOption(options.appId, '--app-id'), cliActor('webhooks send-test')),
    );
  }
}

@SubCommand({ name: 'list', description: 'events with their delivery state and attempts, newest first' })
export class WebhooksListCommand extends CommandRunner {
  constructor(private readonly webhooks: WebhooksService) {
    super();
  }

  @Option({ flags: '--app-id <id>', description: 'only this application' })
  parseAppId(value: string): string {
    return value;
  }

  @Option({ flags: '--status <status>', description: 'pending, delivered or failed' })
  parseStatus(value: string): string {
    return value;
  }

  @Option({ flags: '--limit <n>', description: `at most n events (1-${MAX_LISTED_EVENTS}, default 100)` })
  parseLimit(value: string): number {
    return wholeNumberOption(value, '--limit', MAX_LISTED_EVENTS);
  }

  async run(_args: string[], options: { appId?: string; status?: string; limit?: number }): Promise<void> {
    printJson(await this.webhooks.list(options));
  }
}

@SubCommand({ name: 'replay', description: 'deliver an event again (same Webhook-Id)' })
export class WebhooksReplayCommand extends CommandRunner {
  constructor(private readonly webhooks: WebhooksService) {
    super();
  }

  @Option({ flags: '--event-id <id>', description: 'event id' })
  parseEventId(value: string): string {
    return value;
  }

  async run(_args: string[], options: { eventId?: string }): Promise<void> {
    printJson(
      await this.webhooks.replay(requireOption(options.eventId, '--event-id'), cliActor('webhooks replay')),
    );
  }
}

@Command({
  name: 'webhooks',
  description: 'webhook events: test, list, replay',
  subCommands: [WebhooksSendTestCommand, WebhooksListCommand, WebhooksReplayCommand],
})
export class WebhooksCommand extends CommandRunner {
  async run(args: string[]): Promise<void> {
    unknownSubcommand(this.command, args);
  }
}

export const WEBHOOKS_COMMANDS = [
  WebhooksCommand,
  WebhooksSendTestCommand,
  WebhooksListCommand,
  WebhooksReplayCommand,
];
