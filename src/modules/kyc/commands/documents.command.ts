import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { CliUsageError, printJson, unknownSubcommand } from '#common/cli/output.js';
import { parseDuration } from '#config/app-config.js';
import { DocumentReaper } from '../documents/document-reaper.js';

/** Below this an upload still recording its row could be reached; above it, a date before any document. */
const OLDER_THAN_MIN_MS = 3_600_000;
const OLDER_THAN_MAX_MS = 3650 * 86_400_000;

interface ReapOptions {
  dryRun?: boolean;
  olderThan?: number;
  force?: boolean;
}

@SubCommand({
  name: 'reap',
  description:
    'remove stored document bytes that no document row names and that are older than DOCUMENT_REAPER_GRACE_HOURS (168), local leftovers of unfinished writes included, none when there are more than DOCUMENT_REAPER_MAX_ORPHANS without --force; prints counts and storage keys (exit 1 when held or a removal failed)',
})
export class DocumentsReapCommand extends CommandRunner {
  constructor(private readonly reaper: DocumentReaper) {
    super();
  }

  @Option({ flags: '--dry-run', description: 'list what would be removed, remove nothing' })
  parseDryRun(): boolean {
    return true;
  }

  @Option({
    flags: '--force',
    description:
      'remove the orphans even when there are more than DOCUMENT_REAPER_MAX_ORPHANS (checked first)',
  })
  parseForce(): boolean {
    return true;
  }

  @Option({
    flags: '--older-than <age>',
    description: 'only bytes older than this: minutes (90) or a duration (36h, 2d); at least 1 hour',
  })
  parseOlderThan(value: string): number {
    const ms = /^\d{1,7}$/.test(value) ? Number(value) * 60_000 : parseDuration(value);
    if (ms === undefined || ms < OLDER_THAN_MIN_MS || ms > OLDER_THAN_MAX_MS)
      throw new CliUsageError(
        '--older-than must be minutes or a duration (90, 36h, 2d) from 1 hour to 3650 days',
      );
    return ms;
  }

  async run(_args: string[], options: ReapOptions): Promise<void> {
    const report = await this.reaper.reap({
      olderThanMs: options.olderThan,
      dryRun: options.dryRun,
      force: options.force,
    });
    printJson(report);
    if (report.held && !report.dryRun) {
      process.stderr.write(
        `error: ${report.orphans.length} orphans, more than DOCUMENT_REAPER_MAX_ORPHANS: none removed; check them, then run again with --force\n`,
      );
      process.exitCode = 1;
    } else if (report.failed.length > 0) {
      process.stderr.write(`error: ${report.failed.length} removals failed (see the log)\n`);
      process.exitCode = 1;
    }
  }
}

@Command({ name: 'documents', description: 'stored KYC documents', subCommands: [DocumentsReapCommand] })
export class DocumentsCommand extends CommandRunner {
  async run(args: string[]): Promise<void> {
    unknownSubcommand(this.command, args);
  }
}

export const DOCUMENTS_COMMANDS = [DocumentsCommand, DocumentsReapCommand];
