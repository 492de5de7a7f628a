import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { CliUsageError, printJson, unknownSubcommand, wholeNumberOption } from '#common/cli/output.js';
import { MAX_PAGE_SIZE } from '#common/http/pagination.js';
import { AuditService } from '../audit.service.js';
import { UUID_PATTERN } from '#common/ids/uuid.js';

interface AuditListOptions {
  app?: string;
  resource?: string;
  from?: string;
  to?: string;
  after?: string;
  limit?: number;
}

@SubCommand({
  name: 'list',
  description: 'audit records, oldest first, as JSON {items, nextCursor} (every application unless --app)',
})
export class AuditListCommand extends CommandRunner {
  constructor(private readonly audit: AuditService) {
    super();
  }

  @Option({ flags: '--app <id>', description: 'only this application' })
  parseApp(value: string): string {
    if (!UUID_PATTERN.test(value)) throw new CliUsageError('--app must be an application id (uuid)');
    return value.toLowerCase();
  }

  @Option({ flags: '--resource <id>', description: 'only records of this resource id (a uuid in any case)' })
  parseResource(value: string): string {
    return value;
  }

  @Option({
    flags: '--from <time>',
    description: 'RFC 3339 (e.g. 2026-11-25T00:00:00-03:00): at or after this time',
  })
  parseFrom(value: string): string {
    return value;
  }

  @Option({ flags: '--to <time>', description: 'RFC 3339: before this time' })
  parseTo(value: string): string {
    return value;
  }

  @Option({ flags: '--after <cursor>', description: 'the nextCursor of the previous page' })
  parseAfter(value: string): string {
    return value;
  }

  @Option({ flags: '--limit <n>', description: `at most n records (1-${MAX_PAGE_SIZE}, default 100)` })
  parseLimit(value: string): number {
    return wholeNumberOption(value, '--limit', MAX_PAGE_SIZE);
  }

  async run(_args: string[], options: AuditListOptions): Promise<void> {
    const { app, ...query } = options;
    printJson(await this.audit.forOperator(app, query));
  }
}

@Command({ name: 'audit', description: 'the audit trail', subCommands: [AuditListCommand] })
export class AuditCommand extends CommandRunner {
  async run(args: string[]): Promise<void> {
    unknownSubcommand(this.command, args);
  }
}

export const AUDIT_COMMANDS = [AuditCommand, AuditListCommand];
