import type { Server } from 'node:http';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { bearer, newCuit } from './identity.js';

/** External test accounts of config/counterparty-directory.json (valid check digits). */
export const DIRECTORY = {
  nacion: { number: '0110599590000001234568', cuit: '27234567891', name: 'María Fernanda López' },
  errorDatos: { number: '0110599590000000000010', cuit: '20111111112', simulate: 'ERROR_DATOS' },
  sinGarantia: { number: '0110599590000000000027', cuit: '20222222223', simulate: 'SIN_GARANTIA' },
  errorAcreditacion: {
    number: '0110599590000000000034',
    cuit: '20333333334',
    simulate: 'ERROR_ACREDITACION',
  },
} as const;

/** A CBU with valid check digits that the directory does not list (settles ACREDITADO like any other). */
export const UNLISTED_CBU = '0110599590000000000041';

/** A CVU of another PSP (0142) with valid check digits that the directory does not list (settles ACREDITADO). */
export const UNLISTED_CVU = '0000142300000000012342';

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const TRANSACTION_INFO_KEYS = [
  'account',
  'amount',
  'clearingId',
  'concept',
  'counterParty',
  'createdAt',
  'currency',
  'description',
  'fees',
  'status',
  'summary',
  'taxes',
  'type',
  'uuid',
];

export interface CounterPartyBody {
  name: string;
  cValue: string;
  identifierType: 'CBU' | 'CVU';
  identifier: string;
  branchName: string;
}

export interface TransferBody {
  accountUUID: string;
  movementType: 'DEPOSIT' | 'WITHDRAW';
  counterParty: CounterPartyBody;
  amount: number;
  concept: string;
  summary?: string;
}

export const counterParty = (
  identifier: string,
  cValue: string = newCuit('20'),
  name = 'Contraparte de prueba',
): CounterPartyBody => ({
  name,
  cValue,
  identifierType: identifier.startsWith('000') ? 'CVU' : 'CBU',
  identifier,
  branchName: 'Casa central',
});

export const transferBody = (
  accountUUID: string,
  identifier: string,
  amount: number,
  overrides: Partial<TransferBody> = {},
): TransferBody => ({
  accountUUID,
  movementType: 'WITHDRAW',
  counterParty: counterParty(identifier),
  amount,
  concept: 'VAR',
  ...overrides,
});

export function postTransfer(
  http: Server,
  token: string,
  body: unknown,
  idempotencyKey?: string,
): request.Test {
  const test = request(http).post('/v1/wallet/transactions').set('Authorization', bearer(token));
  if (idempotencyKey !== undefined) test.set('Idempotency-Key', idempotencyKey);
  return test.send(body as object);
}

export async function balanceOf(http: Server, token: string, accountId: string): Promise<number> {
  const response = await request(http)
    .get(`/v1/wallet/accounts/${accountId}/balance`)
    .set('Authorization', bearer(token));
  if (response.status !== 200) throw new Error(`balance failed: ${response.status} ${response.text}`);
  return (response.body as { balance: number }).balance;
}

export interface Operado {
  monthDeposit: number;
  monthWithdraw: number;
  annualDeposit: number;
  annualWithdraw: number;
}

export async function operadoOf(http: Server, token: string, accountId: string): Promise<Operado> {
  const response = await request(http)
    .get(`/v1/wallet/accounts/${accountId}/operado`)
    .set('Authorization', bearer(token));
  if (response.status !== 200) throw new Error(`operado failed: ${response.status} ${response.text}`);
  return response.body as Operado;
}

export async function setFees(
  http: Server,
  token: string,
  accountId: string,
  feeType: 'FIXED' | 'PERCENTAGE',
  amount: number,
): Promise<void> {
  const response = await request(http)
    .patch(`/v1/wallet/accounts/${accountId}/fees`)
    .set('Authorization', bearer(token))
    .send({ feeType, amount });
  if (response.status !== 200) throw new Error(`set fees failed: ${response.status} ${response.text}`);
}

export async function setLimits(
  http: Server,
  token: string,
  accountId: string,
  limits: {
    monthlyWithdrawLimit: number;
    monthlyDepositLimit: number;
    annualWithdrawLimit: number;
    annualDepositLimit: number;
  },
): Promise<void> {
  const response = await request(http)
    .post(`/v1/wallet/accounts/${accountId}/limits`)
    .set('Authorization', bearer(token))
    .send(limits);
  if (response.status !== 200 && response.status !== 201)
    throw new Error(`set limits failed: ${response.status} ${response.text}`);
}

export async function setStatus(
  http: Server,
  token: string,
  accountId: string,
  status: 'ACTIVE' | 'INACTIVE',
): Promise<void> {
  const response = await request(http)
    .patch(`/v1/wallet/accounts/${accountId}`)
    .set('Authorization', bearer(token))
    .send({ status });
  if (response.status !== 200) throw new Error(`set status failed: ${response.status} ${response.text}`);
}

export async function transferStatus(dataSource: DataSource, id: string): Promise<string> {
  const [row] = (await dataSource.query(`SELECT status FROM transfers WHERE id = $1`, [id])) as {
    status: string;
  }[];
  return row.status;
}

export interface TransferEvent {
  uuid: string;
  movementType: string;
  backStatus: string;
  newStatus: string;
}

/** transfer_update payload data of the outbox rows about one transfer, oldest first. */
export async function transferEvents(dataSource: DataSource, transferId: string): Promise<TransferEvent[]> {
  const rows = (await dataSource.query(
    `SELECT payload FROM webhook_events WHERE event = 'transfer_update' AND payload->'data'->>'uuid' = $1 ORDER BY seq`,
    [transferId],
  )) as { payload: { event: string; data: TransferEvent } | string }[];
  return rows.map((row) => {
    const payload =
      typeof row.payload === 'string' ? (JSON.parse(row.payload) as { data: TransferEvent }) : row.payload;
    return payload.data;
  });
}

/** Rows in the tables a transfer writes to. */
export async function moneyRowCounts(dataSource: DataSource): Promise<Record<string, number>> {
  const [row] = (await dataSource.query(
    `SELECT (SELECT count(*) FROM transfers)::int AS transfers,
            (SELECT count(*) FROM journal_entries)::int AS journal_entries,
            (SELECT count(*) FROM postings)::int AS postings,
            (SELECT count(*) FROM transfer_status_history)::int AS history,
            (SELECT count(*) FROM webhook_events)::int AS events`,
  )) as Record<string, number>[];
  return row;
}
