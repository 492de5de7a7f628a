import { readFileSync } from 'node:fs';
import { isValidCbu } from '#modules/wallet/cvu.js';
import { FAILURE_STATUSES } from '../transfer-status.js';
import type { CounterpartyDirectory, DirectoryAccount } from './counterparty-directory.port.js';

/** The simulated directory: a JSON file of accounts at other institutions, validated when loaded. */
export class FixtureDirectory implements CounterpartyDirectory {
  private readonly byNumberIndex = new Map<string, DirectoryAccount>();
  private readonly byAliasIndex = new Map<string, DirectoryAccount>();

  constructor(file: string) {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { accounts?: DirectoryAccount[] };
    for (const account of parsed.accounts ?? []) {
      if (!isValidCbu(account.number)) throw new Error(`${file}: ${account.number} is not a valid CBU/CVU`);
      // A typo here would leave every transfer to the account in flight, its hold kept: refused at the start.
      if (
        account.simulate !== undefined &&
        !(FAILURE_STATUSES as readonly unknown[]).includes(account.simulate)
      )
        throw new Error(
          `${file}: account ${account.number} (${account.alias}): "simulate" is ${JSON.stringify(account.simulate)}, ` +
            `not one of ${FAILURE_STATUSES.join(', ')}`,
        );
      this.byNumberIndex.set(account.number, account);
      this.byAliasIndex.set(account.alias.toLowerCase(), account);
    }
  }

  async byNumber(number: string): Promise<DirectoryAccount | undefined> {
    return this.byNumberIndex.get(number);
  }

  async byAlias(alias: string): Promise<DirectoryAccount | undefined> {
    return this.byAliasIndex.get(alias.toLowerCase());
  }
}
