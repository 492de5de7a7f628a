import { Injectable } from '@nestjs/common';
import type { Command } from 'commander';
import { InjectCommander } from 'nest-commander';
import { CliUsageError } from './output.js';

/**
 * Every command takes the arguments it declares (`arguments: '<uuid>'`) and no more. Commander 11, under
 * nest-commander 3, hands any others to `run`, which read only those it expected: `transfers return <uuid> 10`
 * returned the whole amount, `apps create --name My wallet` registered "My" (decision 0092). One hook on the root
 * command refuses them for every command, one added later too, before its `run`. A group command (`apps`) is
 * left to `unknownSubcommand`, which names an unknown subcommand.
 */
@Injectable()
export class ExcessArgumentsRefusal {
  constructor(@InjectCommander() program: Command) {
    program.hook('preAction', (_program, command) => refuseExcessArguments(command));
  }
}

/** A usage error naming the arguments `command` was given beyond those it declares. */
export function refuseExcessArguments(command: Command): void {
  const declared = command.registeredArguments;
  if (command.commands.length > 0 || declared.some((argument) => argument.variadic)) return;
  const excess = command.args.slice(declared.length);
  if (excess.length === 0) return;
  const takes = declared.length
    ? `${declared.map((argument) => (argument.required ? `<${argument.name()}>` : `[${argument.name()}]`)).join(' ')} only`
    : 'no arguments';
  throw new CliUsageError(
    `unexpected argument${excess.length === 1 ? '' : 's'} ${excess.map((value) => `'${value}'`).join(' ')}: ` +
      `${commandPath(command)} takes ${takes} (an option's value follows its flag, quoted when it has spaces)`,
  );
}

/** `transfers return`: the names from the root's child down (the root is the program). */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current?.parent; current = current.parent)
    names.unshift(current.name());
  return names.join(' ');
}
