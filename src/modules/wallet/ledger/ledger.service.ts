import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { derivedUuid } from '#common/ids/derived-uuid.js';
import { fromDb, Money, toDb } from '../money.js';
import {
  checkReversedAmounts,
  checkSystemAccounts,
  checkTransferEntries,
  systemAccountsAgree,
  type OverReversedTransfer,
  type RowsCheck,
  type SystemAccountCheck,
  type TransferEntriesProblem,
} from './transfer-checks.js';

/**
 * Roles of the system accounts that hold the other side of wallet movements. UNCLAIMED_RETURNS holds the rail's
 * returns to closed accounts until an operator pays them out (decision 0062).
 */
export const SYSTEM_ACCOUNTS = [
  'SETTLEMENT',
  'FEE_REVENUE',
  'TAX_PAYABLE',
  'ADJUSTMENTS',
  'HOLDS',
  'UNCLAIMED_RETURNS',
] as const;
export type SystemAccount = (typeof SYSTEM_ACCOUNTS)[number];

export interface PostingLine {
  accountId: string;
  /** Positive raises the account's balance, negative lowers it. */
  amount: Money;
  currency: string;
}

export interface EntryInput {
  appId: string | null;
  kind: string;
  reference?: string;
  description?: string;
  actor: string;
  lines: PostingLine[];
}

/** Deterministic id of a system account, so every process agrees without a lookup. */
export function systemAccountId(code: SystemAccount, currency: string): string {
  return derivedUuid(`wallet-system-account:${code}:${currency}`);
}

export interface VerifyReport {
  ok: boolean;
  entries: number;
  postings: number;
  walletAccounts: number;
  unbalancedEntries: { entryId: string; currency: string; sum: string }[];
  /** Entries with fewer than two postings. */
  incompleteEntries: string[];
  balanceMismatches: { accountId: string; cached: string; postings: string }[];
  totals: { currency: string; sum: string }[];
  /**
   * Rows that name a row that does not exist, through a foreign key declared NOT ENFORCED (the money path's,
   * docs/decisions/0046): the constraint, the value named and how many rows name it (the first 100 values).
   */
  missingReferences: { constraint: string; missing: string; rows: number }[];
  /**
   * HOLDS, SETTLEMENT, FEE_REVENUE and TAX_PAYABLE in each currency: the sum of their postings and what the
   * transfers say they hold (SYSTEM_ACCOUNT_FORMULAS, transfer-checks.ts); every one, equal or not.
   */
  systemAccounts: SystemAccountCheck[];
  /** Transfers whose journal entries are not the ones their route, movement and status call for. */
  transferEntries: RowsCheck<TransferEntriesProblem>;
  /** Transfers whose reversals or returns add up to more than their amount. */
  overReversed: RowsCheck<OverReversedTransfer>;
}

/** A foreign key declared NOT ENFORCED, as `verify` looks it up: tables and columns quoted as SQL needs them. */
interface UnenforcedReference {
  constraint: string;
  child: string;
  childColumns: string[];
  parent: string;
  parentColumns: string[];
}

/**
 * The double-entry ledger. Entries are append-only (the database refuses
 * UPDATE/DELETE) and must balance per currency (checked here, and again by a
 * deferred constraint trigger at commit). Wallet balances are a cached
 * projection updated in the same transaction; callers lock wallet accounts
 * first, in ascending id order, so concurrent movements never deadlock.
 */
@Injectable()
export class LedgerService {
  private readonly knownSystemAccounts = new Set<string>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Locks wallet ledger accounts FOR UPDATE in id order; returns their balances. */
  async lockWallets(manager: EntityManager, accountIds: string[]): Promise<Map<string, Money>> {
    const ids = [...new Set(accountIds)].sort();
    const rows = (await manager.query(
      `SELECT id, balance FROM ledger_accounts WHERE id = ANY($1::uuid[]) AND kind = 'WALLET' ORDER BY id FOR UPDATE`,
      [ids],
    )) as { id: string; balance: string }[];
    return new Map(rows.map((row) => [row.id, fromDb(row.balance)]));
  }

  async createWalletAccount(manager: EntityManager, id: string, currency: string): Promise<void> {
    await manager.query(
      `INSERT INTO ledger_accounts (id, kind, code, currency, balance) VALUES ($1, 'WALLET', 'WALLET', $2, 0)`,
      [id, currency],
    );
  }

  async systemAccount(manager: EntityManager, code: SystemAccount, currency: string): Promise<string> {
    const id = systemAccountId(code, currency);
    if (!this.knownSystemAccounts.has(id)) {
      const inserted = (await manager.query(
        `INSERT INTO ledger_accounts (id, kind, code, currency, balance) VALUES ($1, 'SYSTEM', $2, $3, 0)
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        [id, code, currency],
      )) as unknown[];
      // Remember it only when it already existed (committed): a row inserted here rolls back with a failed
      // transaction, and a remembered id would then never be inserted again (FK violation on every posting).
      if (inserted.length === 0) this.knownSystemAccounts.add(id);
    }
    return id;
  }

  /**
   * Writes one balanced entry and moves the cached wallet balances, through the database's `ledger_post` (the
   * same function the transfer path calls, src/modules/wallet/sql/ledger_post.sql). Returns the entry id.
   */
  async post(manager: EntityManager, input: EntryInput): Promise<{ entryId: string }> {
    const currencies = new Set(input.lines.map((line) => line.currency));
    if (currencies.size !== 1) {
      throw new Error(
        `a journal entry balances in one currency; this one mixes ${[...currencies].join(', ')}`,
      );
    }
    const [row] = (await manager.query(
      `SELECT ledger_post($1, $2, $3, $4, $5, $6::uuid[], $7::numeric[], $8) AS entry_id`,
      [
        input.appId,
        input.kind,
        input.reference ?? null,
        input.description ?? null,
        input.actor,
        input.lines.map((line) => line.accountId),
        input.lines.map((line) => toDb(line.amount)),
        [...currencies][0],
      ],
    )) as { entry_id: string }[];
    return { entryId: row.entry_id };
  }

  /**
   * Recomputes everything from the postings: every entry balances per currency, every wallet's cached
   * balance equals the sum of its postings, and all accounts together sum to zero per currency; every
   * foreign key the database does not enforce (read from the catalog) holds; and the system accounts, the
   * entries and the reversals agree with what the transfers say (transfer-checks.ts). One snapshot
   * (REPEATABLE READ, read only): a transfer moving while it reads is seen before or after, never half.
   */
  async verify(): Promise<VerifyReport> {
    return this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      await manager.query(`SET TRANSACTION READ ONLY`);
      return this.verifyIn(manager);
    });
  }

  private async verifyIn(manager: EntityManager): Promise<VerifyReport> {
    const unbalanced = (await manager.query(
      `SELECT entry_id AS "entryId", currency, sum(amount)::text AS sum FROM postings
        GROUP BY entry_id, currency HAVING sum(amount) <> 0 LIMIT 100`,
    )) as VerifyReport['unbalancedEntries'];
    const incomplete = (
      (await manager.query(
        `SELECT e.id FROM journal_entries e LEFT JOIN postings p ON p.entry_id = e.id
          GROUP BY e.id HAVING count(p.id) < 2 LIMIT 100`,
      )) as { id: string }[]
    ).map((row) => row.id);
    const mismatches = (await manager.query(
      `SELECT a.id AS "accountId", a.balance::text AS cached, coalesce(p.sum, 0)::text AS postings
         FROM ledger_accounts a
         LEFT JOIN (SELECT account_id, sum(amount) AS sum FROM postings GROUP BY account_id) p ON p.account_id = a.id
        WHERE a.kind = 'WALLET' AND a.balance <> coalesce(p.sum, 0) LIMIT 100`,
    )) as VerifyReport['balanceMismatches'];
    const totals = (await manager.query(
      `SELECT currency, sum(amount)::text AS sum FROM postings GROUP BY currency ORDER BY currency`,
    )) as VerifyReport['totals'];
    const [counts] = (await manager.query(
      `SELECT (SELECT count(*) FROM journal_entries)::int AS entries, (SELECT count(*) FROM postings)::int AS postings,
              (SELECT count(*) FROM ledger_accounts WHERE kind = 'WALLET')::int AS wallets`,
    )) as { entries: number; postings: number; wallets: number }[];
    const totalsBalance = totals.every((total) => new Money(total.sum).isZero());
    const missing = await this.missingReferences(manager);
    const systemAccounts = await checkSystemAccounts(manager);
    const transferEntries = await checkTransferEntries(manager);
    const overReversed = await checkReversedAmounts(manager);
    return {
      ok:
        unbalanced.length === 0 &&
        incomplete.length === 0 &&
        mismatches.length === 0 &&
        totalsBalance &&
        missing.length === 0 &&
        systemAccountsAgree(systemAccounts) &&
        transferEntries.wrong === 0 &&
        overReversed.wrong === 0,
      entries: counts.entries,
      postings: counts.postings,
      walletAccounts: counts.wallets,
      unbalancedEntries: unbalanced,
      incompleteEntries: incomplete,
      balanceMismatches: mismatches,
      totals,
      missingReferences: missing,
      systemAccounts,
      transferEntries,
      overReversed,
    };
  }

  /**
   * The values that unenforced foreign keys name and that do not exist, with how many rows name each (a row with a
   * null in the key names nothing, as an enforced key's MATCH SIMPLE reads it).
   */
  private async missingReferences(manager: EntityManager): Promise<VerifyReport['missingReferences']> {
    const references = (await manager.query(
      `SELECT c.conname AS constraint, c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent,
              cols."childColumns", cols."parentColumns"
         FROM pg_constraint c
        CROSS JOIN LATERAL (
          SELECT array_agg(quote_ident(a.attname) ORDER BY k.i) AS "childColumns",
                 array_agg(quote_ident(b.attname) ORDER BY k.i) AS "parentColumns"
            FROM unnest(c.conkey, c.confkey) WITH ORDINALITY AS k(child, parent, i)
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.child
            JOIN pg_attribute b ON b.attrelid = c.confrelid AND b.attnum = k.parent) cols
        WHERE c.contype = 'f' AND NOT c.conenforced AND c.connamespace = current_schema()::regnamespace
        ORDER BY c.conname`,
    )) as UnenforcedReference[];
    const found: VerifyReport['missingReferences'] = [];
    for (const ref of references) {
      const named = ref.childColumns.map((column) => `c.${column}`);
      const matches = ref.parentColumns.map((column, i) => `p.${column} = ${named[i]}`).join(' AND ');
      const value = named.length === 1 ? `${named[0]}::text` : `row(${named.join(', ')})::text`;
      const rows = (await manager.query(
        `SELECT $1::text AS constraint, ${value} AS missing, count(*)::int AS rows
           FROM ${ref.child} c
          WHERE ${named.map((column) => `${column} IS NOT NULL`).join(' AND ')}
            AND NOT EXISTS (SELECT 1 FROM ${ref.parent} p WHERE ${matches})
          GROUP BY 2 ORDER BY 2 LIMIT 100`,
        [ref.constraint],
      )) as VerifyReport['missingReferences'];
      found.push(...rows);
    }
    return found;
  }
}
