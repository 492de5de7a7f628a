import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import {
  CliUsageError,
  printJson,
  requireOption,
  unknownSubcommand,
  wholeNumberOption,
} from '#common/cli/output.js';
import { MAX_PAGE_SIZE } from '#common/http/pagination.js';
import { codePointLength } from '#common/http/validators.js';
import { UUID_PATTERN } from '#common/ids/uuid.js';
import { Money } from '#modules/wallet/money.js';
import { CONCEPTS } from '../dto/transfer.dto.js';
import { ReversalsService } from '../reversals.service.js';
import { TransfersService } from '../transfers.service.js';
import { UnclaimedReturnsService } from '../unclaimed-returns.service.js';
import { cliActor } from '#modules/audit/audit-trail.js';

interface InboundOptions {
  cvu?: string;
  amount?: string;
  from?: string;
  name?: string;
  cuit?: string;
  concept?: string;
  reference?: string;
}

@SubCommand({
  name: 'inbound',
  description: 'simulate money arriving from the rail into a CVU of this service',
})
export class TransfersInboundCommand extends CommandRunner {
  constructor(private readonly transfers: TransfersService) {
    super();
  }

  @Option({ flags: '--cvu <cvu>', description: 'the receiving CVU' })
  parseCvu(value: string): string {
    return value;
  }

  @Option({ flags: '--amount <amount>', description: 'amount in the account currency' })
  parseAmount(value: string): string {
    return value;
  }

  @Option({ flags: '--from <cbu>', description: 'CBU/CVU of the paying account' })
  parseFrom(value: string): string {
    return value;
  }

  @Option({ flags: '--name <name>', description: 'name of the payer' })
  parseName(value: string): string {
    return value;
  }

  @Option({ flags: '--cuit <cuit>', description: 'CUIT/CUIL of the payer' })
  parseCuit(value: string): string {
    return value;
  }

  @Option({ flags: '--concept <concept>', description: 'transaction concept (default VAR)' })
  parseConcept(value: string): string {
    return value;
  }

  @Option({
    flags: '--reference <id>',
    description:
      "the rail's id of the credit: run again with it, the command prints the same credit, made once",
  })
  parseReference(value: string): string {
    return value;
  }

  async run(_args: string[], options: InboundOptions): Promise<void> {
    const amountText = requireOption(options.amount, '--amount');
    if (!/^\d+(\.\d+)?$/.test(amountText))
      throw new CliUsageError('--amount must be a positive decimal number');
    // The service takes a number, as the API's JSON does: one the text does not give exactly is refused, not
    // rounded (100.0000000000000001 would have been credited as 100).
    if (!new Money(amountText).equals(new Money(String(Number(amountText)))))
      throw new CliUsageError('--amount has more digits than an amount can have');
    const concept = options.concept ?? 'VAR';
    if (!(CONCEPTS as readonly string[]).includes(concept))
      throw new CliUsageError(`--concept must be one of ${CONCEPTS.join(', ')}`);
    printJson(
      await this.transfers.inbound(
        {
          cvu: requireOption(options.cvu, '--cvu'),
          amount: Number(amountText),
          fromIdentifier: requireOption(options.from, '--from'),
          fromName: requireOption(options.name, '--name'),
          fromTaxId: requireOption(options.cuit, '--cuit'),
          concept,
          reference: referenceOption(options.reference),
        },
        cliActor('transfers inbound'),
      ),
    );
  }
}

interface ReturnOptions {
  amount?: string;
  reason?: string;
  reference?: string;
}

@SubCommand({
  name: 'return',
  arguments: '<uuid>',
  description:
    'simulate the rail returning (part of) an external WITHDRAW that was ACREDITADO: the money comes back to the sender, or to UNCLAIMED_RETURNS when its account was closed',
})
export class TransfersReturnCommand extends CommandRunner {
  constructor(private readonly reversals: ReversalsService) {
    super();
  }

  @Option({ flags: '--amount <amount>', description: 'amount returned (default: all that is left)' })
  parseAmount(value: string): string {
    return value;
  }

  @Option({ flags: '--reason <text>', description: 'why the receiving bank returned it (default: returned)' })
  parseReason(value: string): string {
    return value;
  }

  @Option({
    flags: '--reference <id>',
    description:
      "the rail's id of the return: run again with it, the command prints the same return, made once",
  })
  parseReference(value: string): string {
    return value;
  }

  async run(args: string[], options: ReturnOptions): Promise<void> {
    const [uuid] = args;
    if (!uuid || !UUID_PATTERN.test(uuid))
      throw new CliUsageError('<uuid> must be the uuid of the external WITHDRAW');
    if (options.amount !== undefined && !/^\d+(\.\d+)?$/.test(options.amount))
      throw new CliUsageError('--amount must be a positive decimal number');
    const reason = options.reason ?? 'returned';
    // Counted in code points, as the reversal route's reason (validators.ts, decision 0054).
    if (codePointLength(reason) === 0 || codePointLength(reason) > 200)
      throw new CliUsageError('--reason must be 1-200 characters');
    printJson(
      await this.reversals.returnFromRail(
        { transferId: uuid, amount: options.amount, reason, reference: referenceOption(options.reference) },
        cliActor('transfers return'),
      ),
    );
  }
}

interface UnclaimedOptions {
  app?: string;
  all?: boolean;
  after?: string;
  limit?: number;
}

@SubCommand({
  name: 'unclaimed',
  description:
    "the rail's returns to closed accounts, held in UNCLAIMED_RETURNS, oldest first, as JSON {items, nextCursor, held} (every application unless --app)",
})
export class TransfersUnclaimedCommand extends CommandRunner {
  constructor(private readonly unclaimed: UnclaimedReturnsService) {
    super();
  }

  @Option({ flags: '--app <id>', description: 'only this application' })
  parseApp(value: string): string {
    return uuidOption(value, '--app', 'an application id');
  }

  @Option({ flags: '--all', description: 'paid-out returns too' })
  parseAll(): boolean {
    return true;
  }

  @Option({ flags: '--after <cursor>', description: 'the nextCursor of the previous page' })
  parseAfter(value: string): string {
    return uuidOption(value, '--after', 'a nextCursor');
  }

  @Option({ flags: '--limit <n>', description: `at most n returns (1-${MAX_PAGE_SIZE}, default 100)` })
  parseLimit(value: string): number {
    return wholeNumberOption(value, '--limit', MAX_PAGE_SIZE);
  }

  async run(_args: string[], options: UnclaimedOptions): Promise<void> {
    printJson(
      await this.unclaimed.list({
        appId: options.app,
        all: options.all,
        after: options.after,
        limit: options.limit ?? 100,
      }),
    );
  }
}

interface PayOutOptions {
  to?: string;
}

@SubCommand({
  name: 'pay-out',
  arguments: '<uuid>',
  description:
    "pay a return held in UNCLAIMED_RETURNS (its transferId in `transfers unclaimed`) into an ACTIVE account of the closed account's owner",
})
export class TransfersPayOutCommand extends CommandRunner {
  constructor(private readonly unclaimed: UnclaimedReturnsService) {
    super();
  }

  @Option({ flags: '--to <account>', description: 'the account to pay it into (uuid)' })
  parseTo(value: string): string {
    return uuidOption(value, '--to', 'an account id');
  }

  async run(args: string[], options: PayOutOptions): Promise<void> {
    const [uuid] = args;
    if (!uuid || !UUID_PATTERN.test(uuid))
      throw new CliUsageError('<uuid> must be the transferId of an unclaimed return');
    printJson(
      await this.unclaimed.payOut(uuid, requireOption(options.to, '--to'), cliActor('transfers pay-out')),
    );
  }
}

@Command({
  name: 'transfers',
  description: 'transfers',
  subCommands: [
    TransfersInboundCommand,
    TransfersReturnCommand,
    TransfersUnclaimedCommand,
    TransfersPayOutCommand,
  ],
})
export class TransfersCommand extends CommandRunner {
  async run(args: string[]): Promise<void> {
    unknownSubcommand(this.command, args);
  }
}

export const TRANSFERS_COMMANDS = [
  TransfersCommand,
  TransfersInboundCommand,
  TransfersReturnCommand,
  TransfersUnclaimedCommand,
  TransfersPayOutCommand,
];

/** A uuid option, lower case, or a usage error naming the flag. */
function uuidOption(value: string, flag: string, what: string): string {
  if (!UUID_PATTERN.test(value)) throw new CliUsageError(`${flag} must be ${what} (uuid)`);
  return value.toLowerCase();
}

/** A rail reference: 1 to 100 visible ASCII characters, as an Idempotency-Key's are (up to 255). */
function referenceOption(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,100}$/.test(value))
    throw new CliUsageError('--reference must be 1 to 100 visible ASCII characters');
  return value;
}
