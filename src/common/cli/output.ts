import { readFile } from 'node:fs/promises';
import { DomainError, NotFoundError, ValidationFailedError } from '../errors/domain-errors.js';

/** Machine-readable answer of an admin command: one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** A command's failure: the problem on stderr, a non-zero exit. */
export class CliUsageError extends Error {}

export function describeError(error: unknown): string {
  if (error instanceof ValidationFailedError) {
    return error.items.map((item) => (item.path ? `${item.path}: ${item.message}` : item.message)).join('; ');
  }
  if (error instanceof NotFoundError) return `${error.message}: ${error.item}`;
  if (error instanceof DomainError || error instanceof CliUsageError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

export async function readKeyFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    throw new CliUsageError(`cannot read public key file ${file}`);
  }
}

export function requireOption(value: string | undefined, flag: string): string {
  if (value === undefined || value.trim() === '') throw new CliUsageError(`missing required option ${flag}`);
  return value;
}

/** A group command called without (or with an unknown) subcommand: usage on stderr, failure. */
export function unknownSubcommand(
  command: { outputHelp(context?: { error: boolean }): void },
  args: string[],
): never {
  command.outputHelp({ error: true });
  throw new CliUsageError(args.length ? `unknown command: ${args.join(' ')}` : 'a subcommand is required');
}

/** A `--limit`-like option: a whole number from 1 to `max`, or a usage error naming the flag. */
export function wholeNumberOption(value: string, flag: string, max: number): number {
  const number = /^\d{1,6}$/.test(value) ? Number(value) : NaN;
  if (!(number >= 1 && number <= max))
    throw new CliUsageError(`${flag} must be a whole number from 1 to ${max}`);
  return number;
}
