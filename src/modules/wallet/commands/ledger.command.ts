import { Command, CommandRunner, SubCommand } from 'nest-commander';
import { printJson, unknownSubcommand } from '#common/cli/output.js';
import { LedgerService } from '../ledger/ledger.service.js';

@SubCommand({
  name: 'verify',
  description:
    'recompute every wallet balance from its postings and check that every entry balances and has two postings or more, that the postings of each currency sum to zero and that no row names a missing one through a foreign key the database does not enforce (exit 1 on any failure)',
})
export class LedgerVerifyCommand extends CommandRunner {
  constructor(private readonly ledger: LedgerService) {
    super();
  }

  async run(): Promise<void> {
    const report = await this.ledger.verify();
    printJson(report);
    if (!report.ok) {
      process.stderr.write('error: the ledger does not verify\n');
      process.exitCode = 1;
    }
  }
}

@Command({ name: 'ledger', description: 'the double-entry ledger', subCommands: [LedgerVerifyCommand] })
export class LedgerCommand extends CommandRunner {
  async run(args: string[]): Promise<void> {
    unknownSubcommand(this.command, args);
  }
}

export const LEDGER_COMMANDS = [LedgerCommand, LedgerVerifyCommand];
