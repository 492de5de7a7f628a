import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { printJson, requireOption, unknownSubcommand } from '#common/cli/output.js';
import { cliActor } from '#modules/audit/audit-trail.js';
import { SigningKeyAuditService } from '../signing-key-audit.service.js';
import { SigningKeysService } from '../signing-keys.service.js';

@SubCommand({ name: 'rotate', description: 'add a new service signing key; older keys stay published' })
export class KeysRotateCommand extends CommandRunner {
  constructor(
    private readonly keys: SigningKeysService,
    private readonly keyAudit: SigningKeyAuditService,
  ) {
    super();
  }

  /**
   * The key file is not in the database: the change and its record go under the trail's lock, and a change
   * whose record did not commit is recorded by the next catch-up (SigningKeyAuditService).
   */
  async run(): Promise<void> {
    const rotated = await this.keyAudit.change(
      cliActor('keys rotate'),
      () => this.keys.rotate(),
      ({ kid }) => ({ resourceType: 'signing_key', resourceId: kid, outcome: 'created' }),
    );
    printJson(rotated);
  }
}

@SubCommand({ name: 'retire', description: 'stop publishing an old service signing key' })
export class KeysRetireCommand extends CommandRunner {
  constructor(
    private readonly keys: SigningKeysService,
    private readonly keyAudit: SigningKeyAuditService,
  ) {
    super();
  }

  @Option({ flags: '--key-id <kid>', description: 'kid of the key to retire' })
  parseKeyId(value: string): string {
    return value;
  }

  async run(_args: string[], options: { keyId?: string }): Promise<void> {
    const kid = requireOption(options.keyId, '--key-id');
    const retired = await this.keyAudit.change(
      cliActor('keys retire'),
      () => this.keys.retire(kid),
      () => ({ resourceType: 'signing_key', resourceId: kid, outcome: 'retired' }),
    );
    printJson(retired);
  }
}

@SubCommand({ name: 'list', description: 'list the published service signing keys' })
export class KeysListCommand extends CommandRunner {
  constructor(private readonly keys: SigningKeysService) {
    super();
  }

  async run(): Promise<void> {
    const current = await this.keys.current();
    const { keys } = await this.keys.jwks();
    printJson(keys.map((key) => ({ kid: key.kid, current: key.kid === current.kid })));
  }
}

@Command({
  name: 'keys',
  description: "the service's signing keys (access tokens, webhooks)",
  subCommands: [KeysRotateCommand, KeysRetireCommand, KeysListCommand],
})
export class KeysCommand extends CommandRunner {
  async run(args: string[]): Promise<void> {
    unknownSubcommand(this.command, args);
  }
}

export const KEYS_COMMANDS = [KeysCommand, KeysRotateCommand, KeysRetireCommand, KeysListCommand];
