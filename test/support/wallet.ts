import type { Server } from 'node:http';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { holdTransaction, type HeldTransaction } from './database.js';
import { bearer, companyBody, userBody } from './identity.js';

/**
 * Builders and checks for the wallet suites. CVU check digits are computed
 * here from DOMAIN.md C1 (left-to-right weights), not through
 * src/modules/wallet/cvu.ts, so that a bug there cannot hide itself.
 */

export interface AccountInfo {
  ownerType: 'USER' | 'COMPANY';
  uuid: string;
  status: string;
  created: string;
  updated: string;
  cvu: string;
  alias: string;
  currency: string;
  balance: number;
  monthlyDepositOperation: number;
  monthlyWithdrawOperation: number;
}

export const ACCOUNT_KEYS = [
  'alias',
  'balance',
  'created',
  'currency',
  'cvu',
  'monthlyDepositOperation',
  'monthlyWithdrawOperation',
  'ownerType',
  'status',
  'updated',
  'uuid',
];

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A time-ordered id (UUID version 7: decisions 0042, 0050). */
export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const ALIAS = /^[A-Za-z0-9.-]{6,20}$/;

const checkDigit = (digits: string, weights: number[]): number =>
  (10 - ([...digits].reduce((sum, digit, i) => sum + Number(digit) * weights[i], 0) % 10)) % 10;

/** Both CBU check digits (DOMAIN.md C1) valid. */
export function cbuCheckDigitsValid(value: string): boolean {
  return (
    /^\d{22}$/.test(value) &&
    checkDigit(value.slice(0, 7), [7, 1, 3, 9, 7, 1, 3]) === Number(value[7]) &&
    checkDigit(value.slice(8, 21), [3, 9, 7, 1, 3, 9, 7, 1, 3, 9, 7, 1, 3]) === Number(value[21])
  );
}

/** A CVU as issued here: valid check digits, 000 + the PSP code. */
export function expectIssuedCvu(cvu: string, pspCode = '0031'): void {
  expect(cvu).toMatch(/^\d{22}$/);
  expect(cvu.startsWith(`000${pspCode}`)).toBe(true);
  expect(cbuCheckDigitsValid(cvu)).toBe(true);
}

export const limitsOf = (base = 1000) => ({
  monthlyWithdrawLimit: base,
  monthlyDepositLimit: base * 2,
  annualWithdrawLimit: base * 12,
  annualDepositLimit: base * 24,
});

/** A full, valid CreateAccountRequest. */
export function accountBody(
  appId: string,
  uuid: string,
  ownerType: 'USER' | 'COMPANY' = 'USER',
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return { ownerType, uuid, appId, fees: 0, ...limitsOf(), ...overrides };
}

export const expectForbidden = (response: request.Response, reason: string): void => {
  expect(response.status).toBe(403);
  expect(response.body).toStrictEqual({
    name: 'ForbiddenError',
    message: expect.any(String),
    detail: { reason },
  });
};

/** Creates a user (or company) through the API; returns its uuid. */
export async function createOwner(
  http: Server,
  token: string,
  type: 'USER' | 'COMPANY' = 'USER',
): Promise<string> {
  const response = await request(http)
    .post(type === 'USER' ? '/v1/users' : '/v1/companies')
    .set('Authorization', bearer(token))
    .send(type === 'USER' ? userBody() : companyBody());
  if (response.status !== 201) throw new Error(`owner creation failed: ${response.status} ${response.text}`);
  return (response.body as { uuid: string }).uuid;
}

/** Opens an account through POST /v1/wallet/accounts (201 expected). */
export async function openAccount(
  http: Server,
  token: string,
  appId: string,
  ownerId: string,
  ownerType: 'USER' | 'COMPANY' = 'USER',
  overrides: Record<string, unknown> = {},
): Promise<AccountInfo> {
  const response = await request(http)
    .post('/v1/wallet/accounts')
    .set('Authorization', bearer(token))
    .send(accountBody(appId, ownerId, ownerType, overrides));
  if (response.status !== 201)
    throw new Error(`account creation failed: ${response.status} ${response.text}`);
  return response.body as AccountInfo;
}

/** Sets a balance through POST /v1/wallet/accounts/{uuid}/balance (200 expected). */
export async function setBalance(
  http: Server,
  token: string,
  accountId: string,
  balance: number,
): Promise<void> {
  const response = await request(http)
    .post(`/v1/wallet/accounts/${accountId}/balance`)
    .set('Authorization', bearer(token))
    .send({ balance });
  if (response.status !== 200) throw new Error(`set balance failed: ${response.status} ${response.text}`);
}

export interface PostingRow {
  id: string;
  entry_id: string;
  account_id: string;
  amount: string;
  currency: string;
  kind: string;
  actor: string;
  reference: string | null;
  description: string | null;
}

/** Every posting of the entries that touch `accountId`, both sides, oldest first. */
export async function postingsOfEntriesTouching(
  dataSource: DataSource,
  accountId: string,
): Promise<PostingRow[]> {
  return (await dataSource.query(
    `SELECT p.id::text AS id, p.entry_id, p.account_id, p.amount::text AS amount, p.currency,
            e.kind, e.actor, e.reference, e.description
       FROM postings p JOIN journal_entries e ON e.id = p.entry_id
      WHERE p.entry_id IN (SELECT entry_id FROM postings WHERE account_id = $1)
      ORDER BY p.id`,
    [accountId],
  )) as PostingRow[];
}

export async function cachedBalance(dataSource: DataSource, accountId: string): Promise<string> {
  const [row] = (await dataSource.query(
    `SELECT balance::text AS balance FROM ledger_accounts WHERE id = $1`,
    [accountId],
  )) as { balance: string }[];
  return row.balance;
}

/**
 * What DELETE /wallet/accounts/{uuid} does (the account row locked, then its ledger row; DELETED), held open in a
 * transaction of its own, so a test can start a movement that waits for it (`untilWaiting`) and then commit.
 */
export function holdAccountClosing(dataSource: DataSource, accountId: string): Promise<HeldTransaction> {
  return holdTransaction(dataSource, [
    ['SELECT 1 FROM wallet_accounts WHERE id = $1 FOR UPDATE', [accountId]],
    ['SELECT 1 FROM ledger_accounts WHERE id = $1 FOR UPDATE', [accountId]],
    [`UPDATE wallet_accounts SET status = 'DELETED', deleted_at = now() WHERE id = $1`, [accountId]],
  ]);
}
