import type { EntityManager } from 'typeorm';
import { Money } from '../money.js';
import type { SystemAccount } from './ledger.service.js';

/*
 * What `ledger verify` compares between the ledger and the transfers (docs/decisions/0060). The ledger reads the
 * transfers table in SQL, as closing an account does (transfers-in-flight.ts): the wallet imports nothing from
 * the transfers module, so the statuses it names are pinned to transfer-status.ts by a unit test there.
 */

/** Transfer statuses in which the rail still has to settle (transfer-status.ts IN_FLIGHT_STATUSES). */
export const TRANSFERS_IN_FLIGHT = ['COMMITING', 'INICIADO', 'EN_CURSO'] as const;
/** Final statuses of a transfer the rail refused (transfer-status.ts FAILURE_STATUSES). */
export const TRANSFERS_FAILED = ['ERROR_DATOS', 'SIN_GARANTIA', 'ERROR_ACREDITACION'] as const;

/**
 * What each system account holds, per currency, by what the transfers say: a SQL expression over one row `t` of
 * `transfers` (its part of the account's balance, or null for none), summed per currency. `$1` is the statuses
 * in flight. An account added here is checked by `ledger verify` from then on; ADJUSTMENTS is not here (its
 * other side is the operator's, recorded nowhere else than in its entries).
 * - HOLDS: an external WITHDRAW's hold (amount + fee + tax, wallet_create_transfers) until the rail's verdict
 *   captures or releases it (ClearingService.settle).
 * - SETTLEMENT: what went out through the rail less what came in: an external WITHDRAW captured (+amount); an
 *   external DEPOSIT credited (ClearingService.settle: -amount, the fee and tax taken from it), an inbound credit
 *   (TransfersService.inbound) and a return of a WITHDRAW (wallet_reverse_transfer, kind return): -amount.
 * - FEE_REVENUE, TAX_PAYABLE: the fees and taxes of settled transfers, each row its own. An internal transfer's
 *   two rows carry the tax each (the receiver pays it on what it receives, wallet_write_internal), its fee on the
 *   WITHDRAW only; an inbound credit carries the tax on what arrives and no fee (decision 0098); reversals and
 *   returns carry none.
 */
export const SYSTEM_ACCOUNT_FORMULAS: Partial<Record<SystemAccount, string>> = {
  HOLDS: `CASE WHEN t.route = 'EXTERNAL' AND t.movement_type = 'WITHDRAW' AND t.status = ANY ($1::text[])
               THEN t.amount + t.fees + t.taxes END`,
  SETTLEMENT: `CASE WHEN t.route = 'EXTERNAL' AND t.status = 'ACREDITADO'
                    THEN CASE WHEN t.movement_type = 'WITHDRAW' THEN t.amount ELSE -t.amount END END`,
  FEE_REVENUE: `CASE WHEN t.status = 'ACREDITADO' THEN t.fees END`,
  TAX_PAYABLE: `CASE WHEN t.status = 'ACREDITADO' THEN t.taxes END`,
  // A rail return to a closed account, not yet paid out (decision 0062): the only row that posts to it.
  UNCLAIMED_RETURNS: `CASE WHEN t.route = 'EXTERNAL' AND t.reversal_of IS NOT NULL
                          AND EXISTS (SELECT 1 FROM unclaimed_returns u
                                       WHERE u.transfer_id = t.id AND u.paid_out_at IS NULL)
                          THEN t.amount END`,
};

/**
 * The journal entry kinds written for a transfer, each naming it in `reference`: a hold, capture and release
 * (an external WITHDRAW), a credit (an external DEPOSIT the rail settles), an inbound credit, a return, an
 * internal transfer (named by its WITHDRAW) and a reversal (named by its new WITHDRAW).
 */
export const TRANSFER_ENTRY_KINDS = [
  'TRANSFER_HOLD',
  'TRANSFER_CAPTURE',
  'TRANSFER_RELEASE',
  'TRANSFER_CREDIT',
  'INBOUND_TRANSFER',
  'TRANSFER_RETURN',
  'INTERNAL_TRANSFER',
  'TRANSFER_REVERSAL',
] as const;

/**
 * The entries each transfer must have, by route, movement, reversal_of and status: the lists allowed, each the
 * kinds sorted and comma-joined ('' is none). `$2` is the statuses in flight, `$3` the failures.
 */
const EXPECTED_ENTRIES = `CASE
  WHEN t.id IS NULL THEN '{}'::text[]
  WHEN t.route = 'EXTERNAL' AND t.movement_type = 'WITHDRAW' THEN
    CASE WHEN t.status = ANY ($2::text[]) THEN ARRAY['TRANSFER_HOLD']
         WHEN t.status = 'ACREDITADO' THEN ARRAY['TRANSFER_CAPTURE,TRANSFER_HOLD']
         WHEN t.status = ANY ($3::text[]) THEN ARRAY['TRANSFER_HOLD,TRANSFER_RELEASE']
         ELSE '{}'::text[] END
  WHEN t.route = 'EXTERNAL' AND t.reversal_of IS NOT NULL THEN ARRAY['TRANSFER_RETURN']
  WHEN t.route = 'EXTERNAL' AND t.status = 'ACREDITADO' THEN ARRAY['INBOUND_TRANSFER', 'TRANSFER_CREDIT']
  WHEN t.route = 'EXTERNAL' THEN ARRAY['']
  WHEN t.movement_type = 'WITHDRAW' AND t.reversal_of IS NOT NULL THEN ARRAY['TRANSFER_REVERSAL']
  WHEN t.movement_type = 'WITHDRAW' THEN ARRAY['INTERNAL_TRANSFER']
  ELSE ARRAY['']
END`;

/** Each system account of SYSTEM_ACCOUNT_FORMULAS in each currency: its balance and what the transfers say. */
export interface SystemAccountCheck {
  currency: string;
  code: string;
  /** The sum of its postings. */
  balance: string;
  expected: string;
}

/** A transfer whose journal entries are not the ones it must have, or entries that name no transfer. */
export interface TransferEntriesProblem {
  /** The transfer, or the entries' reference when it names no transfer. */
  transferId: string;
  route: string | null;
  movementType: string | null;
  status: string | null;
  /** The kinds of the entries that name it, sorted. */
  entries: string[];
  /** The lists of kinds it may have, each sorted and comma-joined ('' is none); empty when no transfer. */
  expected: string[];
}

/** A transfer whose reversals or returns (the rows whose reversal_of it is) add up to more than its amount. */
export interface OverReversedTransfer {
  transferId: string;
  amount: string;
  reversed: string;
}

/** A check over many rows: how many it read, how many are wrong, and the first 100 of those. */
export interface RowsCheck<T> {
  checked: number;
  wrong: number;
  first: T[];
}

const FIRST = 100;

/**
 * Every system account of SYSTEM_ACCOUNT_FORMULAS, in every currency that has a transfer or a system account,
 * against what the transfers say: each one listed, a missing account as a balance of 0.
 */
export async function checkSystemAccounts(manager: EntityManager): Promise<SystemAccountCheck[]> {
  const codes = Object.keys(SYSTEM_ACCOUNT_FORMULAS) as SystemAccount[];
  // One read of the transfers for every formula; the names are this file's constants, never input.
  const sums = codes.map((code, i) => `coalesce(sum(${SYSTEM_ACCOUNT_FORMULAS[code]}), 0)::text AS s${i}`);
  const expectedRows = (await manager.query(
    `SELECT t.currency, ${sums.join(', ')} FROM transfers t GROUP BY t.currency`,
    [TRANSFERS_IN_FLIGHT],
  )) as ({ currency: string } & Record<string, string>)[];
  // Every system account (for its currency); the postings of those with a formula, each an index-only scan of
  // its own (idx_postings_account_time).
  const accounts = (await manager.query(
    `SELECT a.code, a.currency,
            CASE WHEN a.code = ANY ($1::text[])
                 THEN (SELECT coalesce(sum(p.amount), 0) FROM postings p WHERE p.account_id = a.id)::text END AS balance
       FROM ledger_accounts a WHERE a.kind = 'SYSTEM'`,
    [codes],
  )) as { code: string; currency: string; balance: string | null }[];
  const currencies = [...new Set([...expectedRows, ...accounts].map((row) => row.currency))].sort();
  const checks = new Map<string, SystemAccountCheck>(
    currencies.flatMap((currency) =>
      codes.map((code) => [`${currency} ${code}`, { currency, code, balance: '0', expected: '0' }] as const),
    ),
  );
  for (const row of expectedRows)
    codes.forEach((code, i) => {
      checks.get(`${row.currency} ${code}`)!.expected = row[`s${i}`];
    });
  for (const row of accounts)
    if (row.balance !== null) checks.get(`${row.currency} ${row.code}`)!.balance = row.balance;
  return [...checks.values()];
}

export function systemAccountsAgree(checks: readonly SystemAccountCheck[]): boolean {
  return checks.every((check) => new Money(check.balance).equals(check.expected));
}

/**
 * Every transfer against the entries that name it (EXPECTED_ENTRIES), and every entry of a transfer's kind
 * against the transfer it names: one pass over the transfers and one over the journal entries, joined by hash.
 */
export async function checkTransferEntries(
  manager: EntityManager,
): Promise<RowsCheck<TransferEntriesProblem>> {
  const [row] = (await manager.query(
    `WITH e AS (
       SELECT reference, array_agg(kind ORDER BY kind COLLATE "C") AS kinds
         FROM journal_entries WHERE kind = ANY ($1::text[]) GROUP BY reference),
     x AS MATERIALIZED (
       SELECT coalesce(t.id::text, e.reference) AS id, t.id IS NOT NULL AS transfer, t.route,
              t.movement_type, t.status, coalesce(e.kinds, '{}') AS kinds, ${EXPECTED_ENTRIES} AS expected
         FROM transfers t FULL JOIN e ON e.reference = t.id::text),
     w AS (SELECT * FROM x WHERE NOT array_to_string(kinds, ',') = ANY (expected))
     SELECT (SELECT count(*) FROM x WHERE transfer)::int AS checked,
            (SELECT count(*) FROM w)::int AS wrong,
            (SELECT coalesce(json_agg(f ORDER BY f."transferId"), '[]'::json) FROM (
               SELECT id AS "transferId", route, movement_type AS "movementType", status, kinds AS entries, expected
                 FROM w ORDER BY id LIMIT ${FIRST}) f) AS first`,
    [TRANSFER_ENTRY_KINDS, TRANSFERS_IN_FLIGHT, TRANSFERS_FAILED],
  )) as RowsCheck<TransferEntriesProblem>[];
  return row;
}

/**
 * Transfers reversed or returned beyond their amount: the rows that name one in reversal_of, summed per
 * transfer (the partial index idx_transfers_reversal_of), against its amount.
 */
export async function checkReversedAmounts(manager: EntityManager): Promise<RowsCheck<OverReversedTransfer>> {
  const [row] = (await manager.query(
    `WITH r AS MATERIALIZED (
       SELECT o.id, o.amount, s.reversed
         FROM (SELECT reversal_of, sum(amount) AS reversed FROM transfers WHERE reversal_of IS NOT NULL
                GROUP BY reversal_of) s
         JOIN transfers o ON o.id = s.reversal_of),
     w AS (SELECT * FROM r WHERE reversed > amount)
     SELECT (SELECT count(*) FROM r)::int AS checked,
            (SELECT count(*) FROM w)::int AS wrong,
            (SELECT coalesce(json_agg(f ORDER BY f."transferId"), '[]'::json) FROM (
               SELECT id::text AS "transferId", amount::text AS amount, reversed::text AS reversed
                 FROM w ORDER BY id LIMIT ${FIRST}) f) AS first`,
  )) as RowsCheck<OverReversedTransfer>[];
  return row;
}
