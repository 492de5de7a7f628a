import { Command, CommandRunner, SubCommand } from 'nest-commander';
import { printJson, unknownSubcommand } from '#common/cli/output.js';
import { LedgerService } from '../ledger/ledger.service.js';

@SubCommand({
  name: 'verify',
  description:
    'recompute every wallet balance from its postings and check, in one snapshot, that every entry balances and has two postings or more, that the postings of each currency sum to zero, that no row names a missing one through a foreign key the database does not enforce, that HOLDS, SETTLEMENT, FEE_REVENUE and TAX_PAYABLE hold what the transfers say, that every transfer has the journal entries its status calls for and that none is reversed beyond its amount (exit 1 on any failure)',
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
