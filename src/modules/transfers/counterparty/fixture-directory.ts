import { readFileSync } from 'node:fs';
import { isValidCbu } from '#modules/wallet/cvu.js';
import type { CounterpartyDirectory, DirectoryAccount } from './counterparty-directory.port.js';

/** The simulated directory: a JSON file of accounts at other institutions, validated when loaded. */
export class FixtureDirectory implements CounterpartyDirectory {
  private readonly byNumberIndex = new Map<string, DirectoryAccount>();
  private readonly byAliasIndex = new Map<string, DirectoryAccount>();

  constructor(file: string) {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { accounts?: DirectoryAccount[] };
    for (const account of parsed.accounts ?? []) {
      if (!isValidCbu(account.number)) throw new Error(`${file}: ${account.number} is not a valid CBU/CVU`);
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
