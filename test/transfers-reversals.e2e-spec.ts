import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import request from 'supertest';
import { PG_POOL } from '../src/common/database/pg-pool.js';
import { ClearingService } from '../src/modules/transfers/clearing/clearing.service.js';
import { LedgerService, systemAccountId } from '../src/modules/wallet/ledger/ledger.service.js';
import { Money } from '../src/modules/wallet/money.js';
import { subjectToken, type TestClient } from './support/auth.js';
import { holdTransaction } from './support/database.js';
import {
  bearer,
  countRows,
  expectNotFound,
  expectUnauthorized,
  expectValidation,
} from './support/identity.js';
import { runCli, type ProcessResult } from './support/processes.js';
import type { TestApp } from './support/test-app.js';
import {
  balanceOf,
  moneyRowCounts,
  postTransfer,
  setFees,
  setStatus,
  TRANSACTION_INFO_KEYS,
  transferBody,
  transferEvents,
  UNLISTED_CBU,
} from './support/transfers.js';
import { startWithTwoApplications } from './support/two-applications.js';
import {
  createOwner,
  expectForbidden,
  holdAccountClosing,
  openAccount,
  setBalance,
  UUID_V7,
  type AccountInfo,
} from './support/wallet.js';

interface Reversal {
  uuid: string;
  type: string;
  status: string;
  amount: number;
  fees: number;
  taxes: number;
  description: string | null;
  reversalOf: string;
  account: { uuid: string; cvu: string };
  counterParty: { uuid: string; type: string; identifier: string };
}

interface Summary {
  uuid: string;
  amount: number;
  currency: string;
  reversed: number;
  left: number;
  reversals: Reversal[];
}

/** A JSON amount as integer cents (the tests' own arithmetic, no float sums). */
const cents = (amount: number): number => Math.round(amount * 100);

const REVERSAL_KEYS = [...TRANSACTION_INFO_KEYS, 'reversalOf'].sort();

describe('reversals of settled transfers and returns from the rail (real database)', () => {
  let t: TestApp;
  let appA: TestClient;
  let appB: TestClient;
  let tokenA: string;
  let tokenB: string;
  let ownerS: string;
  let ownerR: string;
  let ownerX: string;
  /** Sender (application A) and receiver (application B). */
  let s: AccountInfo;
  let r: AccountInfo;
  /** Another account of application B, where the receiver's other transfers go. */
  let x: AccountInfo;

  const api = () => request(t.http);
  const reverse = (token: string, uuid: string, body: object, key?: string) => {
    const test = api().post(`/v1/wallet/transactions/${uuid}/reversals`).set('Authorization', bearer(token));
    if (key !== undefined) test.set('Idempotency-Key', key);
    return test.send(body);
  };
  const summary = async (token: string, uuid: string): Promise<Summary> => {
    const response = await api()
      .get(`/v1/wallet/transactions/${uuid}/reversals`)
      .set('Authorization', bearer(token));
    expect(response.status).toBe(200);
    return response.body as Summary;
  };
  /** An internal transfer from `from` to `to` (A's token for s); returns the WITHDRAW and its DEPOSIT. */
  const transfer = async (
    token: string,
    from: AccountInfo,
    to: AccountInfo,
    amount: number,
  ): Promise<{ w: string; d: string; taxes: number; fees: number }> => {
    const response = await postTransfer(t.http, token, transferBody(from.uuid, to.cvu, amount));
    expect(response.status).toBe(201);
    const body = response.body as { uuid: string; taxes: number; fees: number };
    const [row] = (await t.dataSource.query(`SELECT linked_transfer_id AS d FROM transfers WHERE id = $1`, [
      body.uuid,
    ])) as { d: string }[];
    return { w: body.uuid, d: row.d, taxes: body.taxes, fees: body.fees };
  };
  /** Every table a reversal writes, counted. */
  const counts = async () => ({
    ...(await moneyRowCounts(t.dataSource)),
    keys: await countRows(t.dataSource, 'idempotency_keys'),
    audit: await countRows(t.dataSource, 'audit_records'),
    balances: (
      (await t.dataSource.query(`SELECT coalesce(sum(balance), 0)::text AS b FROM ledger_accounts`)) as {
        b: string;
      }[]
    )[0].b,
  });
  /** `send` is refused and nothing at all is written. */
  const refusedWritingNothing = async (send: () => Promise<request.Response>) => {
    const before = await counts();
    const response = await send();
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(await counts()).toStrictEqual(before);
    return response;
  };
  const dbNow = async (): Promise<string> =>
    (
      (await t.dataSource.query(
        `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS now`,
      )) as { now: string }[]
    )[0].now;
  const verify = async () => expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
  /** `transfers …` through the built CLI, with `dataDir` as its DATA_DIR. */
  const transfersCli = (dataDir: string) => (args: string[]) =>
    runCli({ databaseUrl: t.databaseUrl, dataDir }, ['transfers', ...args]);
  /** `transfers return …` through the built CLI, with `dataDir` as its DATA_DIR. */
  const returnCli = (dataDir: string) => {
    const cli = transfersCli(dataDir);
    return (args: string[]) => cli(['return', ...args]);
  };
  /** The returns made of the WITHDRAW `w`, with their amounts as text. */
  const returnsOf = (w: string) =>
    t.dataSource.query(
      `SELECT id::text AS id, amount::text AS amount FROM transfers WHERE reversal_of = $1 ORDER BY id`,
      [w],
    ) as Promise<{ id: string; amount: string }[]>;
  /** A `transfers return` run that succeeded: exit 0, nothing on stderr, the return of `amount` to `sender`'s account. */
  const reportedReturn = (
    result: ProcessResult,
    sender: AccountInfo,
    w: string,
    amount: number,
    creditedTo: 'ACCOUNT' | 'UNCLAIMED_RETURNS' = 'ACCOUNT',
  ): { transferId: string } => {
    expect({ code: result.code, stderr: result.stderr }).toStrictEqual({ code: 0, stderr: '' });
    const answer = JSON.parse(result.stdout) as { transferId: string };
    expect(answer).toStrictEqual({
      transferId: expect.stringMatching(UUID_V7),
      accountId: sender.uuid,
      returnOf: w,
      amount,
      status: 'ACREDITADO',
      creditedTo,
    });
    return answer;
  };
  /** `args` through `cli` refused: exit 1, nothing on stdout, `message` on stderr, nothing written anywhere. */
  const refusedByCli = async (
    cli: (args: string[]) => Promise<ProcessResult>,
    args: string[],
    message: string,
  ) => {
    const before = await counts();
    const result = await cli(args);
    expect({ args, code: result.code, stdout: result.stdout }).toStrictEqual({ args, code: 1, stdout: '' });
    expect(result.stderr).toContain(message);
    expect(await counts()).toStrictEqual(before);
  };
  /**
   * An account's balance as the ledger holds it, numeric(24,6) as text (no float in between): a wallet's cached
   * balance, a system account's postings (0 before its first use).
   */
  const ledgerBalance = async (accountId: string): Promise<string> =>
    (
      (await t.dataSource.query(
        `SELECT coalesce((SELECT CASE WHEN a.kind = 'WALLET' THEN a.balance ELSE
                                  (SELECT coalesce(sum(p.amount), 0) FROM postings p WHERE p.account_id = a.id) END
                            FROM ledger_accounts a WHERE a.id = $1), 0)::text AS b`,
        [accountId],
      )) as { b: string }[]
    )[0].b;
  /** A new account of application A, holding `balance`. */
  const fundedAccount = async (balance: number, owner?: string): Promise<AccountInfo> => {
    const account = await openAccount(
      t.http,
      tokenA,
      appA.appId,
      owner ?? (await createOwner(t.http, tokenA)),
    );
    await setBalance(t.http, tokenA, account.uuid, balance);
    return account;
  };
  /** An external WITHDRAW of `amount` from `sender`, settled ACREDITADO: its uuid. */
  const settledWithdraw = async (sender: AccountInfo, amount: number): Promise<string> => {
    const external = await postTransfer(t.http, tokenA, transferBody(sender.uuid, UNLISTED_CBU, amount));
    expect(external.status).toBe(201);
    const w = (external.body as { uuid: string }).uuid;
    const clearing = t.app.get(ClearingService);
    expect(await clearing.present(w)).toBe(true);
    expect(await clearing.settle(w, 'ACREDITADO')).toBe('settled');
    return w;
  };

  beforeAll(async () => {
    ({ t, appA, appB, tokenA, tokenB } = await startWithTwoApplications('reversals', {
      env: { TRANSFER_TAX_RATE: '0.01' },
    }));
    ownerS = await createOwner(t.http, tokenA);
    ownerR = await createOwner(t.http, tokenB);
    s = await openAccount(t.http, tokenA, appA.appId, ownerS);
    r = await openAccount(t.http, tokenB, appB.appId, ownerR);
    ownerX = await createOwner(t.http, tokenB);
    x = await openAccount(t.http, tokenB, appB.appId, ownerX);
    await setBalance(t.http, tokenA, s.uuid, 1000);
    await setFees(t.http, tokenA, s.uuid, 'FIXED', 1.5);
  });
  afterAll(async () => {
    await t.close();
  });

  it('gives a transfer back in parts, up to its amount, with both applications told and the ledger balanced', async () => {
    const original = await transfer(tokenA, s, r, 100);
    expect(original).toMatchObject({ fees: 1.5, taxes: 1 });
    expect(await balanceOf(t.http, tokenA, s.uuid)).toBe(1000 - 100 - 1.5 - 1);
    expect(await balanceOf(t.http, tokenB, r.uuid)).toBe(99);
    // The receiver paid the tax on what it received: to give all 100 back it needs more than it got.
    await setBalance(t.http, tokenB, r.uuid, 150);

    // B (the receiver's application) gives 30 back, addressing its own DEPOSIT.
    const first = await reverse(tokenB, original.d, { amount: 30, reason: 'devolución parcial' });
    expect(first.status).toBe(201);
    const part = first.body as Reversal;
    expect(Object.keys(part).sort()).toEqual(REVERSAL_KEYS);
    expect(part).toMatchObject({
      type: 'WITHDRAW',
      status: 'ACREDITADO',
      amount: 30,
      fees: 0,
      taxes: 0,
      description: 'devolución parcial',
      reversalOf: original.d,
      account: { uuid: ownerR, cvu: r.cvu },
      counterParty: { uuid: ownerS, type: 'INTERNAL', identifier: s.cvu },
    });
    // The rest, by default what is left.
    const rest = await reverse(tokenB, original.d, { reason: 'resto' });
    expect(rest.status).toBe(201);
    expect(rest.body).toMatchObject({ amount: 70, reversalOf: original.d });

    // Fees and taxes of the original are not given back; the reversals carry none.
    expect(await balanceOf(t.http, tokenA, s.uuid)).toBe(1000 - 1.5 - 1);
    expect(await balanceOf(t.http, tokenB, r.uuid)).toBe(50);
    await verify();

    // The new pair: the receiver's WITHDRAW and the sender's DEPOSIT, linked, each pointing at its own side.
    const rows = (await t.dataSource.query(
      `SELECT id, app_id, account_id, movement_type, status, route, linked_transfer_id, reversal_of,
              amount::text AS amount, fees::text AS fees, taxes::text AS taxes
         FROM transfers WHERE reversal_of IN ($1, $2) ORDER BY created_at, movement_type DESC`,
      [original.w, original.d],
    )) as Record<string, string>[];
    expect(rows).toHaveLength(4);
    const withdraw = rows.find((row) => row.id === part.uuid)!;
    const deposit = rows.find((row) => row.id === withdraw.linked_transfer_id)!;
    expect(withdraw).toMatchObject({ app_id: appB.appId, account_id: r.uuid, reversal_of: original.d });
    expect(deposit).toMatchObject({
      app_id: appA.appId,
      account_id: s.uuid,
      movement_type: 'DEPOSIT',
      status: 'ACREDITADO',
      route: 'INTERNAL',
      linked_transfer_id: part.uuid,
      reversal_of: original.w,
      amount: '30.000000',
      fees: '0.000000',
      taxes: '0.000000',
    });
    const history = (await t.dataSource.query(
      `SELECT from_status, to_status FROM transfer_status_path WHERE transfer_id = $1 ORDER BY step`,
      [deposit.id],
    )) as unknown[];
    expect(history).toStrictEqual([
      { from_status: null, to_status: 'COMMITING' },
      { from_status: 'COMMITING', to_status: 'ACREDITADO' },
    ]);
    const [entry] = (await t.dataSource.query(
      `SELECT e.kind, e.actor, e.description, json_agg(json_build_object('account', p.account_id, 'amount', p.amount::text) ORDER BY p.id) AS postings
         FROM journal_entries e JOIN postings p ON p.entry_id = e.id WHERE e.reference = $1 GROUP BY e.id`,
      [part.uuid],
    )) as unknown[];
    expect(entry).toStrictEqual({
      kind: 'TRANSFER_REVERSAL',
      actor: `client:${appB.appId}`,
      description: 'devolución parcial',
      postings: [
        { account: r.uuid, amount: '-30.000000' },
        { account: s.uuid, amount: '30.000000' },
      ],
    });

    // Each application hears of its own new transfer.
    expect(await transferEvents(t.dataSource, part.uuid)).toStrictEqual([
      { uuid: part.uuid, movementType: 'WITHDRAW', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
    ]);
    expect(await transferEvents(t.dataSource, deposit.id)).toStrictEqual([
      { uuid: deposit.id, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
    ]);
    const eventApps = (await t.dataSource.query(
      `SELECT payload->'data'->>'uuid' AS uuid, subject, app_id, id::text AS id FROM webhook_events
        WHERE payload->'data'->>'uuid' IN ($1, $2)`,
      [part.uuid, deposit.id],
    )) as { uuid: string; subject: string; app_id: string; id: string }[];
    // Each event's subject is the original row of the same application: delivered after the original's own events,
    // which are ordered per subject (decision 0071).
    expect(Object.fromEntries(eventApps.map((row) => [row.uuid, [row.app_id, row.subject]]))).toStrictEqual({
      [part.uuid]: [appB.appId, original.d],
      [deposit.id]: [appA.appId, original.w],
    });
    // The new rows, their journal entry and their events have time-ordered ids (decision 0050).
    const [entryId] = (await t.dataSource.query(
      `SELECT id::text AS id FROM journal_entries WHERE reference = $1`,
      [part.uuid],
    )) as { id: string }[];
    for (const id of [part.uuid, deposit.id, entryId.id, ...eventApps.map((row) => row.id)])
      expect(id).toMatch(UUID_V7);

    // What was reversed, from both sides; the original's TransactionInfo is unchanged.
    const fromB = await summary(tokenB, original.d);
    expect(fromB).toMatchObject({ uuid: original.d, amount: 100, currency: 'ARS', reversed: 100, left: 0 });
    expect(fromB.reversals.map((row) => [row.uuid, row.amount, row.reversalOf])).toStrictEqual([
      [part.uuid, 30, original.d],
      [(rest.body as Reversal).uuid, 70, original.d],
    ]);
    const fromA = await summary(tokenA, original.w);
    expect(fromA).toMatchObject({ uuid: original.w, amount: 100, reversed: 100, left: 0 });
    expect(fromA.reversals.map((row) => [row.type, row.amount, row.reversalOf])).toStrictEqual([
      ['DEPOSIT', 30, original.w],
      ['DEPOSIT', 70, original.w],
    ]);
    const info = await api()
      .get(`/v1/wallet/transactions/${original.w}`)
      .set('Authorization', bearer(tokenA));
    expect(Object.keys(info.body as object).sort()).toEqual([...TRANSACTION_INFO_KEYS].sort());
    // A user token reads its own transfer's reversals too; another application's transfer is unknown.
    const userToken = await subjectToken(appA, ownerS);
    expect((await summary(userToken, original.w)).reversed).toBe(100);
    expectNotFound(
      await api().get(`/v1/wallet/transactions/${original.d}/reversals`).set('Authorization', bearer(tokenA)),
      original.d,
    );

    // Nothing is left: a further reversal is refused, writing nothing.
    const again = await refusedWritingNothing(() => reverse(tokenB, original.d, { reason: 'otra vez' }));
    expectForbidden(again, 'INVALID_STATE');
    expect(again.body.message).toBe('the transfer is already fully reversed');
    const more = await refusedWritingNothing(() =>
      reverse(tokenB, original.d, { amount: 0.01, reason: 'x' }),
    );
    expect(expectValidation(more)).toStrictEqual([
      { path: 'amount', type: 'invalid', message: 'amount is more than what is left to reverse (0 ARS)' },
    ]);
  });

  it('refuses what cannot be reversed with the interface body, writing nothing', async () => {
    const original = await transfer(tokenA, s, r, 50);
    // A refusal is the database's answer on a good connection: it keeps its place in the pool (decision 0066).
    const pool = t.app.get<pg.Pool>(PG_POOL);
    let removed = 0;
    const onRemove = () => void removed++;
    pool.on('remove', onRemove);

    // Who: the sender's application sees its WITHDRAW but cannot give the receiver's money back.
    const bySender = await refusedWritingNothing(() => reverse(tokenA, original.w, { reason: 'x' }));
    expectForbidden(bySender, 'FORBIDDEN');
    // Another application's row, or no transfer at all: unknown.
    expectNotFound(
      await refusedWritingNothing(() => reverse(tokenA, original.d, { reason: 'x' })),
      original.d,
    );
    const unknown = '6b1f0a52-3c1e-4d6f-9a8b-0c2d4e6f8a0b';
    expectNotFound(await refusedWritingNothing(() => reverse(tokenB, unknown, { reason: 'x' })), unknown);
    pool.off('remove', onRemove);
    expect(removed).toBe(0);

    // The amount: zero, negative, too many decimals, more than what is left.
    const amountRefusal = async (amount: number, message: string) => {
      const response = await refusedWritingNothing(() =>
        reverse(tokenB, original.d, { amount, reason: 'x' }),
      );
      expect(expectValidation(response)).toStrictEqual([{ path: 'amount', type: 'invalid', message }]);
    };
    await amountRefusal(0, 'amount must be greater than 0');
    await amountRefusal(-5, 'amount must be greater than 0');
    await amountRefusal(1.001, 'amount has more than 2 decimals for ARS');
    await amountRefusal(50.01, 'amount is more than what is left to reverse (50 ARS)');

    // The body: a reason is required, nothing else is accepted.
    expect(
      expectValidation(await refusedWritingNothing(() => reverse(tokenB, original.d, { amount: 1 }))).map(
        (item) => item.path,
      ),
    ).toStrictEqual(['reason']);
    expectValidation(
      await refusedWritingNothing(() => reverse(tokenB, original.d, { reason: 'x', extra: true })),
    );

    // A reversal of a reversal.
    const part = await reverse(tokenB, original.d, { amount: 10, reason: 'parcial' });
    expect(part.status).toBe(201);
    const ofReversal = await refusedWritingNothing(() =>
      reverse(tokenB, (part.body as Reversal).uuid, { reason: 'x' }),
    );
    expectForbidden(ofReversal, 'INVALID_STATE');
    expect(ofReversal.body.message).toBe('this transfer is itself a reversal and cannot be reversed');

    // Funds of the account that gives back, and the state of both accounts.
    await setBalance(t.http, tokenB, r.uuid, 5);
    await amountRefusal(6, 'insufficient funds: the available balance does not cover the amount');
    await setBalance(t.http, tokenB, r.uuid, 100);
    await setStatus(t.http, tokenB, r.uuid, 'INACTIVE');
    const giverInactive = await refusedWritingNothing(() => reverse(tokenB, original.d, { reason: 'x' }));
    expectForbidden(giverInactive, 'INVALID_STATE');
    expect(giverInactive.body.message).toBe('the account is INACTIVE');
    await setStatus(t.http, tokenB, r.uuid, 'ACTIVE');
    await setStatus(t.http, tokenA, s.uuid, 'INACTIVE');
    const takerInactive = await refusedWritingNothing(() => reverse(tokenB, original.d, { reason: 'x' }));
    expectForbidden(takerInactive, 'INVALID_STATE');
    expect(takerInactive.body.message).toBe('the receiving account cannot receive money');
    await setStatus(t.http, tokenA, s.uuid, 'ACTIVE');

    // An external transfer: in flight, then settled (money that left comes back only from the rail).
    const external = await postTransfer(t.http, tokenA, transferBody(s.uuid, UNLISTED_CBU, 20));
    expect(external.status).toBe(201);
    const externalId = (external.body as { uuid: string }).uuid;
    const inFlight = await refusedWritingNothing(() => reverse(tokenA, externalId, { reason: 'x' }));
    expectForbidden(inFlight, 'INVALID_STATE');
    expect(inFlight.body.message).toBe(
      'the transfer is INICIADO: only an ACREDITADO transfer can be reversed',
    );
    const clearing = t.app.get(ClearingService);
    expect(await clearing.present(externalId)).toBe(true);
    expect(await clearing.settle(externalId, 'ACREDITADO')).toBe('settled');
    const settled = await refusedWritingNothing(() => reverse(tokenA, externalId, { reason: 'x' }));
    expectForbidden(settled, 'INVALID_STATE');
    expect(settled.body.message).toBe(
      'money sent to another institution comes back only as a return from the rail',
    );

    // A token that is neither an application's nor a user's is not accepted.
    expectUnauthorized(
      await refusedWritingNothing(() => reverse('not-a-token', original.d, { reason: 'x' })),
    );
    await verify();
  });

  it("with a user token, the owner of the account that received a transfer gives it back; no one else's rows are reached", async () => {
    await setBalance(t.http, tokenB, r.uuid, 200);
    await setBalance(t.http, tokenB, x.uuid, 200);
    const original = await transfer(tokenA, s, r, 40);
    const asR = await subjectToken(appB, ownerR);
    const asS = await subjectToken(appA, ownerS);
    const asX = await subjectToken(appB, ownerX);

    // The sender's owner sees its WITHDRAW but cannot take the receiver's money back.
    const bySender = await refusedWritingNothing(() => reverse(asS, original.w, { reason: 'x' }));
    expectForbidden(bySender, 'FORBIDDEN');
    expect(bySender.body.message).toBe(
      'only the application of the account that received the transfer can give it back',
    );
    // Rows of another application, or of another owner of the same application: unknown, as GET answers.
    expectNotFound(await refusedWritingNothing(() => reverse(asR, original.w, { reason: 'x' })), original.w);
    expectNotFound(await refusedWritingNothing(() => reverse(asX, original.d, { reason: 'x' })), original.d);
    for (const [token, id] of [
      [asR, original.w],
      [asX, original.d],
    ])
      expectNotFound(
        await api().get(`/v1/wallet/transactions/${id}`).set('Authorization', bearer(token)),
        id,
      );

    // The receiver's owner gives 15 back, addressing its DEPOSIT; the entry and the audit record name the user.
    const given = await reverse(asR, original.d, { amount: 15, reason: 'me equivoqué' }, 'user-reversal-1');
    expect(given.status).toBe(201);
    const part = given.body as Reversal;
    expect(part).toMatchObject({
      type: 'WITHDRAW',
      status: 'ACREDITADO',
      amount: 15,
      reversalOf: original.d,
      account: { uuid: ownerR, cvu: r.cvu },
      counterParty: { uuid: ownerS, type: 'INTERNAL', identifier: s.cvu },
    });
    const [entry] = (await t.dataSource.query(
      `SELECT kind, actor FROM journal_entries WHERE reference = $1`,
      [part.uuid],
    )) as unknown[];
    expect(entry).toStrictEqual({ kind: 'TRANSFER_REVERSAL', actor: `subject:${ownerR}` });
    const audit = (await t.dataSource.query(
      `SELECT app_id, principal_type, principal, action, resource_type, outcome
         FROM audit_records WHERE resource_id = $1`,
      [part.uuid],
    )) as unknown[];
    expect(audit).toStrictEqual([
      {
        app_id: appB.appId,
        principal_type: 'subject',
        principal: ownerR,
        action: 'POST /v1/wallet/transactions/{uuid}/reversals',
        resource_type: 'transfer',
        outcome: 'ACREDITADO',
      },
    ]);
    // A retry under the same key replays the answer; the user reads the summary of its own transfer.
    const beforeReplay = await counts();
    const replay = await reverse(asR, original.d, { amount: 15, reason: 'me equivoqué' }, 'user-reversal-1');
    expect(replay.status).toBe(201);
    expect(replay.body).toStrictEqual(given.body);
    expect(await counts()).toStrictEqual(beforeReplay);
    expect(await summary(asR, original.d)).toMatchObject({ reversed: 15, left: 25 });
    expect(await summary(tokenA, original.w)).toMatchObject({ reversed: 15, left: 25 });

    // Within one application: r's owner sent to x's owner. Only x's owner gives it back.
    const inside = await transfer(tokenB, r, x, 20);
    const byInsideSender = await refusedWritingNothing(() => reverse(asR, inside.w, { reason: 'x' }));
    expectForbidden(byInsideSender, 'FORBIDDEN');
    expect(byInsideSender.body.message).toBe(
      'only the owner of the account that received the transfer can give it back',
    );
    expectNotFound(await refusedWritingNothing(() => reverse(asX, inside.w, { reason: 'x' })), inside.w);
    const back = await reverse(asX, inside.d, { reason: 'no era para mí' });
    expect(back.status).toBe(201);
    expect(back.body).toMatchObject({
      amount: 20,
      reversalOf: inside.d,
      account: { uuid: ownerX, cvu: x.cvu },
    });
    await verify();
  });

  it('replays a retried reversal under its Idempotency-Key, refuses the key with another body, and keeps transfer keys apart', async () => {
    await setBalance(t.http, tokenB, r.uuid, 500);
    const original = await transfer(tokenA, s, r, 40);
    const key = `rev-${Date.now()}`;
    const first = await reverse(tokenB, original.d, { amount: 15, reason: 'duplicado' }, key);
    expect(first.status).toBe(201);
    const before = await counts();
    const replay = await reverse(tokenB, original.d, { amount: 15, reason: 'duplicado' }, key);
    expect(replay.status).toBe(201);
    expect(replay.body).toStrictEqual(first.body);
    expect(await counts()).toStrictEqual(before);
    // Concurrent twins: one reversal.
    const twinKey = `${key}-twin`;
    const twins = await Promise.all(
      [1, 2, 3].map(() => reverse(tokenB, original.d, { amount: 5, reason: 'gemelos' }, twinKey)),
    );
    expect(twins.map((response) => response.status)).toStrictEqual([201, 201, 201]);
    expect(new Set(twins.map((response) => (response.body as Reversal).uuid)).size).toBe(1);
    expect((await summary(tokenB, original.d)).reversed).toBe(20);

    const other = await refusedWritingNothing(() =>
      reverse(tokenB, original.d, { amount: 16, reason: 'duplicado' }, key),
    );
    expect(expectValidation(other)).toStrictEqual([
      {
        path: 'Idempotency-Key',
        type: 'invalid',
        message: 'this Idempotency-Key was used with a different request',
      },
    ]);
    // The same key on POST /wallet/transactions is another namespace: a new transfer, not a conflict.
    const plain = await postTransfer(t.http, tokenB, transferBody(r.uuid, x.cvu, 1), key);
    expect(plain.status).toBe(201);
    // A bad key is refused before anything.
    expectValidation(
      await refusedWritingNothing(() => reverse(tokenB, original.d, { reason: 'x' }, 'with space')),
    );
    await verify();
  });

  it('a reversal racing transfers out of the same account never overdraws it, and the statements of both accounts balance', async () => {
    const sender = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
    const giver = await openAccount(t.http, tokenB, appB.appId, await createOwner(t.http, tokenB));
    await setBalance(t.http, tokenA, sender.uuid, 300);
    const original = await transfer(tokenA, sender, giver, 100);
    await setBalance(t.http, tokenB, giver.uuid, 100);
    // The period starts here: both accounts have a history before it (opening balances 100 and 199).
    const from = await dbNow();
    const xBefore = cents(await balanceOf(t.http, tokenB, x.uuid));
    const senderBefore = cents(await balanceOf(t.http, tokenA, sender.uuid));
    expect(senderBefore).toBe(19900);

    // All at once: 12 transfers of 15 (15.15 with the tax) out of the giver, 12 reversals of 10 from it, and 6
    // transfers of 5 the other way (the giver gets 4.95 of each): 100 cannot cover them all.
    const work = [
      ...Array.from({ length: 12 }, () => async () => ({
        kind: 'transfer' as const,
        response: await postTransfer(t.http, tokenB, transferBody(giver.uuid, x.cvu, 15)),
      })),
      ...Array.from({ length: 12 }, () => async () => ({
        kind: 'reversal' as const,
        response: await reverse(tokenB, original.d, { amount: 10, reason: 'carrera' }),
      })),
      ...Array.from({ length: 6 }, () => async () => ({
        kind: 'incoming' as const,
        response: await postTransfer(t.http, tokenA, transferBody(sender.uuid, giver.cvu, 5)),
      })),
    ];
    // For the race only, the database itself refuses any write that would leave the giver below zero (even
    // inside a transaction that commits later): an overdraft would surface as a 500, not pass unseen.
    await t.dataSource.query(
      `ALTER TABLE ledger_accounts ADD CONSTRAINT test_giver_never_negative CHECK (id <> '${giver.uuid}' OR balance >= 0)`,
    );
    const results = await Promise.all(work.map((run) => run())).finally(() =>
      t.dataSource.query(`ALTER TABLE ledger_accounts DROP CONSTRAINT test_giver_never_negative`),
    );
    const accepted = { transfer: 0, reversal: 0, incoming: 0 };
    for (const { kind, response } of results) {
      if (response.status === 201) accepted[kind]++;
      else {
        expect(kind).not.toBe('incoming');
        expect(expectValidation(response)).toStrictEqual([
          { path: 'amount', type: 'invalid', message: expect.stringMatching(/^insufficient funds: /) },
        ]);
      }
    }
    expect(accepted.incoming).toBe(6);
    expect(accepted.transfer + accepted.reversal).toBeGreaterThan(0);
    const giverAfter = cents(await balanceOf(t.http, tokenB, giver.uuid));
    expect(giverAfter).toBe(10000 - 1515 * accepted.transfer - 1000 * accepted.reversal + 495 * 6);
    expect(giverAfter).toBeGreaterThanOrEqual(0);
    // Money conserved: what left each account arrived at the other (the transfers' tax aside).
    expect(cents(await balanceOf(t.http, tokenB, x.uuid)) - xBefore).toBe(1485 * accepted.transfer);
    expect(cents(await balanceOf(t.http, tokenA, sender.uuid)) - senderBefore).toBe(
      1000 * accepted.reversal - 505 * 6,
    );
    const reversed = await summary(tokenB, original.d);
    expect(reversed.reversed).toBe(10 * accepted.reversal);
    expect(reversed.reversed).toBeLessThanOrEqual(100);
    await verify();

    // The statement of each account over the period: opening + movements = closing, the running balance
    // consistent and never below zero (postings are timed when inserted, under the account's lock, so the
    // statement lists them in the order the funds checks ran), the reversals among the movements.
    const to = await dbNow();
    for (const [account, token] of [
      [giver, tokenB],
      [sender, tokenA],
    ] as const) {
      const response = await api()
        .get(`/v1/wallet/accounts/${account.uuid}/statement`)
        .query({ from, to, limit: 500 })
        .set('Authorization', bearer(token));
      expect(response.status).toBe(200);
      const statement = response.body as {
        openingBalance: number;
        closingBalance: number;
        totalIn: number;
        totalOut: number;
        movements: { amount: number; balance: number; kind: string }[];
      };
      expect(cents(statement.openingBalance)).toBe(account === giver ? 10000 : 19900);
      let running = cents(statement.openingBalance);
      for (const movement of statement.movements) {
        running += cents(movement.amount);
        expect(cents(movement.balance)).toBe(running);
        expect(running).toBeGreaterThanOrEqual(0);
      }
      expect(running).toBe(cents(statement.closingBalance));
      expect(cents(statement.openingBalance) + cents(statement.totalIn) - cents(statement.totalOut)).toBe(
        running,
      );
      expect(statement.closingBalance).toBe(await balanceOf(t.http, token, account.uuid));
      expect(statement.movements.filter((movement) => movement.kind === 'TRANSFER_REVERSAL')).toHaveLength(
        accepted.reversal,
      );
    }
  });

  it("each account's statement names its own transactions: the receiver's DEPOSIT and its reversal WITHDRAW, the sender's WITHDRAW and its reversal DEPOSIT (JSON and CSV; decision 0084)", async () => {
    const sender = await fundedAccount(300);
    await setFees(t.http, tokenA, sender.uuid, 'FIXED', 1.5);
    const receiver = await openAccount(t.http, tokenB, appB.appId, await createOwner(t.http, tokenB));
    const original = await transfer(tokenA, sender, receiver, 100);
    const reversal = await reverse(tokenB, original.d, { amount: 40, reason: 'vuelta' });
    expect(reversal.status).toBe(201);
    const giveBack = (reversal.body as Reversal).uuid;
    const [{ id: giveBackDeposit }] = (await t.dataSource.query(
      `SELECT linked_transfer_id::text AS id FROM transfers WHERE id = $1`,
      [giveBack],
    )) as { id: string }[];
    for (const [account, token, own] of [
      // The receiver (application B): its DEPOSIT, then the WITHDRAW that gave part of it back.
      [
        receiver,
        tokenB,
        [
          ['INTERNAL_TRANSFER', 99, original.d],
          ['TRANSFER_REVERSAL', -40, giveBack],
        ],
      ],
      // The sender (application A): its WITHDRAW (amount, fee and tax), then the DEPOSIT of what came back.
      [
        sender,
        tokenA,
        [
          ['INTERNAL_TRANSFER', -102.5, original.w],
          ['TRANSFER_REVERSAL', 40, giveBackDeposit],
        ],
      ],
    ] as const) {
      const statement = () =>
        api().get(`/v1/wallet/accounts/${account.uuid}/statement`).set('Authorization', bearer(token));
      const json = await statement();
      expect(json.status).toBe(200);
      const movements = (json.body as { movements: { kind: string; amount: number; reference: string }[] })
        .movements;
      const lines = movements.filter((m) => m.kind !== 'BALANCE_ADJUSTMENT');
      expect(lines.map((m) => [m.kind, m.amount, m.reference])).toStrictEqual(own);
      // The CSV's reference column (the 8th) names the same rows.
      const csv = await statement().set('Accept', 'text/csv');
      expect(csv.status).toBe(200);
      const rows = csv.text
        .split('\r\n')
        .map((row) => row.split(','))
        .filter((row) => row[0] === 'MOVEMENT' && row[6] !== 'BALANCE_ADJUSTMENT');
      expect(rows.map((row) => [row[6], Number(row[2]), row[7]])).toStrictEqual(own);
      // Each is a transaction the account's own application opens.
      for (const [, , uuid] of own) {
        const info = await api().get(`/v1/wallet/transactions/${uuid}`).set('Authorization', bearer(token));
        expect([uuid, info.status, (info.body as { uuid: string }).uuid]).toStrictEqual([uuid, 200, uuid]);
      }
    }
  });

  it('concurrent reversals of one transfer add up to at most its amount', async () => {
    await setBalance(t.http, tokenB, r.uuid, 1000);
    const original = await transfer(tokenA, s, r, 100);
    const before = await moneyRowCounts(t.dataSource);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => reverse(tokenB, original.d, { amount: 20, reason: 'a la vez' })),
    );
    expect(results.filter((response) => response.status === 201)).toHaveLength(5);
    for (const response of results.filter((response) => response.status !== 201)) {
      expect(expectValidation(response)).toStrictEqual([
        { path: 'amount', type: 'invalid', message: 'amount is more than what is left to reverse (0 ARS)' },
      ]);
    }
    expect(await summary(tokenB, original.d)).toMatchObject({ reversed: 100, left: 0 });
    // Five reversals: two transfer rows, one entry of two postings and two events each; no history row (the
    // creation is implied by the transfer row, docs/decisions/0035-write-each-fact-once.md).
    const after = await moneyRowCounts(t.dataSource);
    expect({
      transfers: after.transfers - before.transfers,
      journal_entries: after.journal_entries - before.journal_entries,
      postings: after.postings - before.postings,
      history: after.history - before.history,
      events: after.events - before.events,
    }).toStrictEqual({ transfers: 10, journal_entries: 5, postings: 10, history: 0, events: 10 });
    await verify();
  });

  it('a reversal that waited for an account being closed sees it closed: 403, nothing credited to the closed account', async () => {
    const sender = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
    await setBalance(t.http, tokenA, sender.uuid, 101);
    await setBalance(t.http, tokenB, r.uuid, 1000); // the receiver can give it all back
    const original = await transfer(tokenA, sender, r, 100); // 100 and its 1 % tax: the sender is left at 0
    expect(await balanceOf(t.http, tokenA, sender.uuid)).toBe(0);
    const closing = await holdAccountClosing(t.dataSource, sender.uuid);
    try {
      const before = await counts();
      const pending = reverse(tokenB, original.d, { reason: 'cerrada a la vez' }).then(
        (response) => response,
      );
      await closing.untilWaiting(); // for the ledger row's lock
      await closing.commit();
      const response = await pending;
      expect({ status: response.status, body: response.body as unknown }).toStrictEqual({
        status: 403,
        body: {
          name: 'ForbiddenError',
          message: 'the receiving account cannot receive money',
          detail: { reason: 'INVALID_STATE' },
        },
      });
      expect(await counts()).toStrictEqual(before);
    } finally {
      await closing.release();
    }
    const [row] = (await t.dataSource.query(
      `SELECT w.status, l.balance = 0 AS empty FROM wallet_accounts w JOIN ledger_accounts l ON l.id = w.id
        WHERE w.id = $1`,
      [sender.uuid],
    )) as { status: string; empty: boolean }[];
    expect(row).toEqual({ status: 'DELETED', empty: true });
    await verify();
  });

  it("a user's reversal that waited for its account to be moved to another owner is refused (403), naming no one", async () => {
    const u1 = await createOwner(t.http, tokenB);
    const u2 = await createOwner(t.http, tokenB);
    const account = await openAccount(t.http, tokenB, appB.appId, u1);
    const original = await transfer(tokenA, s, account, 50);
    const asU1 = await subjectToken(appB, u1);
    // The account's ledger row held, as a transfer group holds it: the application's move of the account to u2
    // waits for it, then u1's reversal of the deposit (its owner check passed on what was committed then).
    const ledger = await holdTransaction(t.dataSource, [
      ['SELECT 1 FROM ledger_accounts WHERE id = $1 FOR UPDATE', [account.uuid]],
    ]);
    try {
      const moving = api()
        .patch(`/v1/wallet/accounts/${account.uuid}`)
        .set('Authorization', bearer(tokenB))
        .send({ type: 'USER', entityId: u2 })
        .then((response) => response);
      await ledger.untilWaiting(1);
      const reversing = reverse(asU1, original.d, { amount: 20, reason: 'me equivoqué' }).then(
        (response) => response,
      );
      await ledger.untilWaiting(2);
      await ledger.release(); // the move commits first, then the reversal reads the account
      expect((await moving).status).toBe(200);
      const refused = await reversing;
      expectForbidden(refused, 'FORBIDDEN');
      expect(refused.body).toStrictEqual({
        name: 'ForbiddenError',
        message: 'only the owner of the account that received the transfer can give it back',
        detail: { reason: 'FORBIDDEN' },
      });
    } finally {
      await ledger.release();
    }
    // Nothing left the account, which is u2's now.
    expect(await summary(tokenB, original.d)).toMatchObject({ reversed: 0, left: 50, reversals: [] });
    const [row] = (await t.dataSource.query(
      `SELECT w.owner_id, (SELECT count(*)::int FROM transfers x WHERE x.account_id = w.id) AS transfers
         FROM wallet_accounts w WHERE w.id = $1`,
      [account.uuid],
    )) as unknown[];
    expect(row).toStrictEqual({ owner_id: u2, transfers: 1 });
    await verify();
  });

  it('the rail returns an external WITHDRAW (CLI transfers return): the sender is credited from settlement, in parts, up to the amount', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-return-'));
    const cli = returnCli(dataDir);
    try {
      const sender = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
      await setBalance(t.http, tokenA, sender.uuid, 500);
      const external = await postTransfer(t.http, tokenA, transferBody(sender.uuid, UNLISTED_CBU, 200));
      expect(external.status).toBe(201);
      const w = (external.body as { uuid: string }).uuid;
      expect(await balanceOf(t.http, tokenA, sender.uuid)).toBe(298);

      // Still in flight: no return yet, nothing written.
      let before = await counts();
      const early = await cli([w, '--amount', '50']);
      expect(early.code).not.toBe(0);
      expect(early.stderr).toContain('the transfer is INICIADO: only an ACREDITADO transfer can be reversed');
      expect(await counts()).toStrictEqual(before);

      const clearing = t.app.get(ClearingService);
      expect(await clearing.present(w)).toBe(true);
      expect(await clearing.settle(w, 'ACREDITADO')).toBe('settled');

      // --reason counts code points, as the route's reason does: 123 of them (223 UTF-16 units) pass, 201 do not.
      const reason = `cuenta destino cerrada ${'💸'.repeat(100)}`;
      const tooLong = await cli([w, '--amount', '50', '--reason', '💸'.repeat(201)]);
      expect(tooLong.code).not.toBe(0);
      expect(tooLong.stderr).toContain('--reason must be 1-200 characters');
      const first = await cli([w, '--amount', '50', '--reason', reason]);
      expect(first.code).toBe(0);
      const answer = JSON.parse(first.stdout) as { transferId: string };
      expect(answer).toStrictEqual({
        transferId: expect.any(String),
        accountId: sender.uuid,
        returnOf: w,
        amount: 50,
        status: 'ACREDITADO',
        creditedTo: 'ACCOUNT',
      });
      expect(await balanceOf(t.http, tokenA, sender.uuid)).toBe(348);
      expect(await transferEvents(t.dataSource, answer.transferId)).toStrictEqual([
        { uuid: answer.transferId, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
      ]);
      const [entry] = (await t.dataSource.query(
        `SELECT e.kind, e.actor, count(p.id)::int AS postings FROM journal_entries e
           JOIN postings p ON p.entry_id = e.id WHERE e.reference = $1 GROUP BY e.id`,
        [answer.transferId],
      )) as unknown[];
      expect(entry).toStrictEqual({ kind: 'TRANSFER_RETURN', actor: 'system:clearing-return', postings: 2 });
      // Its audit record names the operator who delivered it (decision 0032), in the sender's application.
      expect(
        await t.dataSource.query(
          `SELECT app_id, principal_type, principal, action, outcome, request_id FROM audit_records
            WHERE resource_type = 'transfer' AND resource_id = $1`,
          [answer.transferId],
        ),
      ).toStrictEqual([
        {
          app_id: appA.appId,
          principal_type: 'cli',
          principal: os.userInfo().username,
          action: 'transfers return',
          outcome: 'ACREDITADO',
          request_id: null,
        },
      ]);
      let seen = await summary(tokenA, w);
      expect(seen).toMatchObject({ uuid: w, amount: 200, reversed: 50, left: 150 });
      expect(seen.reversals).toHaveLength(1);
      expect(seen.reversals[0]).toMatchObject({
        uuid: answer.transferId,
        type: 'DEPOSIT',
        status: 'ACREDITADO',
        amount: 50,
        description: reason,
        reversalOf: w,
        counterParty: { type: 'EXTERNAL', identifier: UNLISTED_CBU },
      });

      // The application cannot reverse it itself; the rail returns the rest, then nothing more.
      const byApp = await refusedWritingNothing(() => reverse(tokenA, w, { reason: 'x' }));
      expectForbidden(byApp, 'INVALID_STATE');
      const rest = await cli([w]);
      expect(rest.code).toBe(0);
      expect(JSON.parse(rest.stdout)).toMatchObject({ amount: 150, returnOf: w });
      seen = await summary(tokenA, w);
      expect(seen).toMatchObject({ reversed: 200, left: 0 });
      expect(await balanceOf(t.http, tokenA, sender.uuid)).toBe(498);
      before = await counts();
      const again = await cli([w, '--amount', '1']);
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain('amount is more than what is left to reverse (0 ARS)');
      // Only an external WITHDRAW comes back from the rail.
      const internal = await transfer(tokenA, sender, r, 10);
      before = await counts();
      const notExternal = await cli([internal.w]);
      expect(notExternal.code).not.toBe(0);
      expect(notExternal.stderr).toContain('only an EXTERNAL WITHDRAW can be returned by the rail');
      const unknown = await cli(['not-a-uuid']);
      expect(unknown.code).not.toBe(0);
      expect(await counts()).toStrictEqual(before);
      await verify();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it('`transfers return <uuid> 10` (an amount without its flag) is refused: nothing returned, the whole amount left (decision 0092)', async () => {
    const cli = returnCli(t.dataDir);
    const sender = await fundedAccount(500);
    const w = await settledWithdraw(sender, 100);
    const balance = await ledgerBalance(sender.uuid);
    // Before, `10` was dropped and the whole 100 came back.
    await refusedByCli(cli, [w, '10'], "unexpected argument '10': transfers return takes <uuid> only");
    await refusedByCli(
      cli,
      [w, '--amount', '10', 'again'],
      "unexpected argument 'again': transfers return takes <uuid> only",
    );
    expect(await returnsOf(w)).toStrictEqual([]);
    expect(await ledgerBalance(sender.uuid)).toBe(balance);
    expect(await summary(tokenA, w)).toMatchObject({ amount: 100, reversed: 0, left: 100 });
    // Said as the command takes it, the 10 is returned.
    reportedReturn(await cli([w, '--amount', '10']), sender, w, 10);
    expect(await summary(tokenA, w)).toMatchObject({ reversed: 10, left: 90 });
    await verify();
  }, 120_000);

  it("the rail's return is made once per reference (CLI transfers return --reference): run again, twice at once, after the account closed; the reference with another amount or transfer is refused; a new one after the close is held", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-return-ref-'));
    const cli = returnCli(dataDir);
    const refused = (args: string[], message: string) => refusedByCli(cli, args, message);
    try {
      const sender = await fundedAccount(500);
      const w = await settledWithdraw(sender, 200); // 200 and its 1 % tax
      const w2 = await settledWithdraw(sender, 100);
      expect(await ledgerBalance(sender.uuid)).toBe('197.000000');
      const reference = `COELSA-RET-${Date.now()}`;
      const partial = [w, '--amount', '50.5', '--reference', reference];

      // Twice at once (the rail's message delivered twice, or the command run again while the first runs): both
      // wait for the WITHDRAW's row, held here, then go on together; one return is made, both print it.
      const held = await holdTransaction(t.dataSource, [
        ['SELECT 1 FROM transfers WHERE id = $1 FOR UPDATE', [w]],
      ]);
      const both = Promise.all([cli(partial), cli(partial)]);
      try {
        await held.untilWaiting(2);
        await held.commit();
      } finally {
        await held.release();
      }
      const [first, second] = await both;
      const answer = reportedReturn(first, sender, w, 50.5);
      expect({ code: second.code, stdout: second.stdout }).toStrictEqual({ code: 0, stdout: first.stdout });
      expect(await returnsOf(w)).toStrictEqual([{ id: answer.transferId, amount: '50.500000' }]);
      expect(await ledgerBalance(sender.uuid)).toBe('247.500000');
      // The reference is claimed under the WITHDRAW's application, in the return namespace.
      expect(
        await t.dataSource.query(
          `SELECT response_status, response_body->>'id' AS id FROM idempotency_keys WHERE app_id = $1 AND key = $2`,
          [appA.appId, `return ${reference}`],
        ),
      ).toStrictEqual([{ response_status: 201, id: answer.transferId }]);

      // Run again later, the amount written another way and another reason: the first return, nothing written.
      let before = await counts();
      for (const args of [
        partial,
        [w, '--amount', '50.50', '--reason', 'otra vez', '--reference', reference],
      ]) {
        const again = await cli(args);
        expect({ code: again.code, stdout: again.stdout }).toStrictEqual({ code: 0, stdout: first.stdout });
      }
      expect(await counts()).toStrictEqual(before);
      expect(await ledgerBalance(sender.uuid)).toBe('247.500000');

      // The reference with another amount, another transfer, or no amount (what is left) is refused; so is a
      // reference that is not 1 to 100 visible ASCII characters.
      const reused = 'reference: this reference was used for another return';
      await refused([w, '--amount', '60', '--reference', reference], reused);
      await refused([w2, '--amount', '50.5', '--reference', reference], reused);
      await refused([w, '--reference', reference], reused);
      await refused([w, '--amount', '1', '--reference', 'with space'], '--reference must be 1 to 100');
      expect(await ledgerBalance(sender.uuid)).toBe('247.500000');

      // A new reference returns the rest (no --amount: what is left), once.
      const rest = [w, '--reference', `${reference}-b`];
      const restFirst = await cli(rest);
      expect(restFirst.code).toBe(0);
      const restAnswer = JSON.parse(restFirst.stdout) as { transferId: string };
      expect(restAnswer).toMatchObject({ returnOf: w, amount: 149.5 });
      const restAgain = await cli(rest);
      expect({ code: restAgain.code, stdout: restAgain.stdout }).toStrictEqual({
        code: 0,
        stdout: restFirst.stdout,
      });
      expect((await returnsOf(w)).map((row) => row.amount).sort()).toStrictEqual(['149.500000', '50.500000']);
      expect(await ledgerBalance(sender.uuid)).toBe('397.000000');
      expect(await summary(tokenA, w)).toMatchObject({ amount: 200, reversed: 200, left: 0 });

      // The account is emptied and closed; the rail sends its messages again: each prints the return it made
      // (not "the account is DELETED"), and a new reference is booked, its money held in UNCLAIMED_RETURNS.
      await setBalance(t.http, tokenA, sender.uuid, 0);
      const closed = await request(t.http)
        .delete(`/v1/wallet/accounts/${sender.uuid}`)
        .set('Authorization', bearer(tokenA));
      expect(closed.status).toBe(200);
      before = await counts();
      for (const [args, stdout] of [
        [partial, first.stdout],
        [rest, restFirst.stdout],
      ] as const) {
        const late = await cli(args);
        expect({ code: late.code, stdout: late.stdout }).toStrictEqual({ code: 0, stdout });
      }
      expect(await counts()).toStrictEqual(before);
      const afterClose = await cli([w2, '--amount', '10', '--reference', `${reference}-c`]);
      expect({ code: afterClose.code, stderr: afterClose.stderr }).toStrictEqual({ code: 0, stderr: '' });
      expect(JSON.parse(afterClose.stdout)).toMatchObject({
        accountId: sender.uuid,
        returnOf: w2,
        amount: 10,
        creditedTo: 'UNCLAIMED_RETURNS',
      });
      expect(await ledgerBalance(sender.uuid)).toBe('0.000000');
      await verify();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000); // thirteen runs of the CLI, each a process that starts Nest

  it('a return whose follow-up read loses its connection after the return committed is still reported, and booked once (decision 0082)', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-return-lost-'));
    const cli = returnCli(dataDir);
    try {
      const sender = await fundedAccount(300);
      const w = await settledWithdraw(sender, 100);
      const before = await ledgerBalance(sender.uuid);
      // The follow-up read joins unclaimed_returns, which the return of an open account does not touch: held
      // here, the read waits on it after the return committed, and its backend is ended while it waits.
      const held = await holdTransaction(t.dataSource, [
        ['LOCK TABLE unclaimed_returns IN ACCESS EXCLUSIVE MODE', []],
      ]);
      const running = cli([w, '--amount', '20']);
      try {
        await held.untilWaiting(1);
        // The return is committed while its follow-up read waits.
        expect(await returnsOf(w)).toHaveLength(1);
        expect(
          await t.dataSource.query(
            `SELECT pg_terminate_backend(pid, 10000) AS ended FROM pg_stat_activity
              WHERE cardinality(pg_blocking_pids(pid)) > 0 AND query LIKE '%LEFT JOIN unclaimed_returns%'`,
          ),
        ).toEqual([{ ended: true }]);
        await held.commit();
      } finally {
        await held.release();
      }
      const answer = reportedReturn(await running, sender, w, 20);
      expect(await returnsOf(w)).toStrictEqual([{ id: answer.transferId, amount: '20.000000' }]);
      expect(await ledgerBalance(sender.uuid)).toBe((Number(before) + 20).toFixed(6));
      await verify();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("another application's reversal, or a user's of another owner's row, answers 404 without waiting for the transfer's lock", async () => {
    await setBalance(t.http, tokenA, s.uuid, 100);
    const original = await transfer(tokenA, s, r, 10);
    const asX = await subjectToken(appB, ownerX);
    // The transfer's own application holds both rows, as a reversal or a clearing step of it does.
    const held = await holdTransaction(t.dataSource, [
      ['SELECT 1 FROM transfers WHERE id IN ($1, $2) ORDER BY id FOR UPDATE', [original.w, original.d]],
    ]);
    try {
      for (const [token, id] of [
        [tokenB, original.w], // application B addresses application A's WITHDRAW
        [asX, original.d], // x's owner addresses r's DEPOSIT (its own application, another owner)
      ]) {
        const answer: { response?: request.Response } = {};
        const pending = reverse(token, id, { reason: 'no es mía' }).then((response) => {
          answer.response = response;
        });
        // Until it is answered, nothing waits for the held rows: the 404 took no lock.
        while (answer.response === undefined) {
          expect(await held.waiting()).toBe(0);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        await pending;
        expect({ status: answer.response.status, text: answer.response.text }).toStrictEqual({
          status: 404,
          text: JSON.stringify({
            name: 'NotFoundError',
            message: 'Transfer not found',
            detail: { item: id },
          }),
        });
      }
    } finally {
      await held.release();
    }
    expect(await summary(tokenB, original.d)).toMatchObject({ reversed: 0, left: 10 });
  });

  it('the rail returns money to a stopped (INACTIVE) account: credited as to an ACTIVE one', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-return-inactive-'));
    const cli = returnCli(dataDir);
    try {
      const sender = await fundedAccount(101);
      const w = await settledWithdraw(sender, 100); // 100 and its 1 % tax
      await setStatus(t.http, tokenA, sender.uuid, 'INACTIVE');
      const returned = await cli([w, '--amount', '30.5']);
      expect({ code: returned.code, stderr: returned.stderr }).toStrictEqual({ code: 0, stderr: '' });
      expect(JSON.parse(returned.stdout)).toMatchObject({
        accountId: sender.uuid,
        returnOf: w,
        amount: 30.5,
        creditedTo: 'ACCOUNT',
      });
      expect(await ledgerBalance(sender.uuid)).toBe('30.500000');
      expect(
        await t.dataSource.query(`SELECT status FROM wallet_accounts WHERE id = $1`, [sender.uuid]),
      ).toStrictEqual([{ status: 'INACTIVE' }]);
      await verify();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("the rail returns a WITHDRAW whose account was closed since: held in UNCLAIMED_RETURNS against the return, listed, paid out into the owner's new account", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-return-closed-'));
    const cli = transfersCli(dataDir);
    const suspense = systemAccountId('UNCLAIMED_RETURNS', 'ARS');
    /** `a + b` as the ledger prints it (numeric(24,6)): exact decimals, no float. */
    const plus = (a: string, b: string) => new Money(a).plus(b).toFixed(6);
    /**
     * The invariants: SETTLEMENT is what the settled external transfers say (as test/support/bank.ts checks it),
     * UNCLAIMED_RETURNS is what the returns still unclaimed add up to, and `ledger verify` passes.
     */
    const invariants = async () => {
      const [row] = (await t.dataSource.query(
        `SELECT (SELECT coalesce(sum(amount), 0) FROM postings WHERE account_id = $1)::text AS settlement,
                (SELECT coalesce(sum(CASE WHEN movement_type = 'WITHDRAW' THEN amount ELSE -amount END), 0)
                   FROM transfers WHERE route = 'EXTERNAL' AND status = 'ACREDITADO')::text AS settlement_expected,
                (SELECT coalesce(sum(amount), 0) FROM postings WHERE account_id = $2)::text AS suspense,
                (SELECT coalesce(sum(t.amount), 0) FROM unclaimed_returns u JOIN transfers t ON t.id = u.transfer_id
                  WHERE u.paid_out_at IS NULL AND t.currency = 'ARS')::text AS suspense_expected`,
        [systemAccountId('SETTLEMENT', 'ARS'), suspense],
      )) as Record<string, string>[];
      expect(row.settlement).toBe(row.settlement_expected);
      expect(row.suspense).toBe(row.suspense_expected);
      await verify();
      // ledger verify checks the same (decision 0060): a return marked paid out with no pay-out posted is seen.
      const held = (await t.dataSource.query(
        'SELECT transfer_id FROM unclaimed_returns WHERE paid_out_at IS NULL LIMIT 1',
      )) as { transfer_id: string }[];
      if (held.length > 0) {
        const mark = (paid: boolean) =>
          t.dataSource.query(
            `UPDATE unclaimed_returns u SET paid_out_at = CASE WHEN $2 THEN now() END,
                    paid_out_to = CASE WHEN $2 THEN t.account_id END
               FROM transfers t WHERE t.id = u.transfer_id AND u.transfer_id = $1`,
            [held[0].transfer_id, paid],
          );
        await mark(true);
        try {
          const report = await t.app.get(LedgerService).verify();
          expect(report.ok).toBe(false);
          expect(report.systemAccounts.find((check) => check.code === 'UNCLAIMED_RETURNS')).toMatchObject({
            balance: row.suspense,
          });
        } finally {
          await mark(false);
        }
      }
    };
    const refused = (args: string[], message: string) => refusedByCli(cli, args, message);
    try {
      // The user sends its whole balance to a CBU (100 and its 1 % tax), the transfer settles, the user closes
      // the account.
      const owner = await createOwner(t.http, tokenA);
      const closed = await fundedAccount(101, owner);
      const w = await settledWithdraw(closed, 100);
      expect(await ledgerBalance(closed.uuid)).toBe('0.000000');
      const deleted = await api()
        .delete(`/v1/wallet/accounts/${closed.uuid}`)
        .set('Authorization', bearer(tokenA));
      expect(deleted.status).toBe(200);

      // Days later the receiving bank returns part of it: booked, its money held in UNCLAIMED_RETURNS.
      const heldBefore = await ledgerBalance(suspense);
      const settlementBefore = await ledgerBalance(systemAccountId('SETTLEMENT', 'ARS'));
      const reference = `COELSA-RET-CLOSED-${Date.now()}`;
      const partial = [
        'return',
        w,
        '--amount',
        '60.25',
        '--reason',
        'cuenta destino cerrada',
        '--reference',
        reference,
      ];
      const first = await cli(partial);
      const answer = reportedReturn(first, closed, w, 60.25, 'UNCLAIMED_RETURNS');
      const r1 = answer.transferId;
      expect(await ledgerBalance(closed.uuid)).toBe('0.000000');
      expect(await ledgerBalance(suspense)).toBe(plus(heldBefore, '60.25'));
      expect(await ledgerBalance(systemAccountId('SETTLEMENT', 'ARS'))).toBe(
        plus(settlementBefore, '-60.25'),
      );
      // The return is the closed account's DEPOSIT, as any return; the entry credits UNCLAIMED_RETURNS; the
      // unclaimed_returns row names it.
      expect(
        await t.dataSource.query(
          `SELECT app_id, account_id, movement_type, status, route, amount::text AS amount, reversal_of
             FROM transfers WHERE id = $1`,
          [r1],
        ),
      ).toStrictEqual([
        {
          app_id: appA.appId,
          account_id: closed.uuid,
          movement_type: 'DEPOSIT',
          status: 'ACREDITADO',
          route: 'EXTERNAL',
          amount: '60.250000',
          reversal_of: w,
        },
      ]);
      expect(
        await t.dataSource.query(
          `SELECT e.kind, e.actor, p.account_id, p.amount::text AS amount FROM journal_entries e
             JOIN postings p ON p.entry_id = e.id WHERE e.reference = $1 ORDER BY p.amount`,
          [r1],
        ),
      ).toStrictEqual([
        {
          kind: 'TRANSFER_RETURN',
          actor: 'system:clearing-return',
          account_id: systemAccountId('SETTLEMENT', 'ARS'),
          amount: '-60.250000',
        },
        {
          kind: 'TRANSFER_RETURN',
          actor: 'system:clearing-return',
          account_id: suspense,
          amount: '60.250000',
        },
      ]);
      expect(
        await t.dataSource.query(
          `SELECT paid_out_at, paid_out_to FROM unclaimed_returns WHERE transfer_id = $1`,
          [r1],
        ),
      ).toStrictEqual([{ paid_out_at: null, paid_out_to: null }]);
      // The application still exists: it is told, and reads the return of its WITHDRAW; so is the audit record.
      expect(await transferEvents(t.dataSource, r1)).toStrictEqual([
        { uuid: r1, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
      ]);
      expect(
        await t.dataSource.query(
          `SELECT app_id, subject FROM webhook_events WHERE payload->'data'->>'uuid' = $1`,
          [r1],
        ),
      ).toStrictEqual([{ app_id: appA.appId, subject: w }]);
      expect(
        await t.dataSource.query(
          `SELECT app_id, principal_type, action, outcome FROM audit_records
            WHERE resource_type = 'transfer' AND resource_id = $1`,
          [r1],
        ),
      ).toStrictEqual([
        { app_id: appA.appId, principal_type: 'cli', action: 'transfers return', outcome: 'ACREDITADO' },
      ]);
      expect(await summary(tokenA, w)).toMatchObject({ uuid: w, amount: 100, reversed: 60.25, left: 39.75 });
      await invariants();

      // The rail's reference replays, the amount written another way too; nothing is written again.
      let before = await counts();
      for (const args of [partial, ['return', w, '--amount', '60.250', '--reference', reference]]) {
        const again = await cli(args);
        expect({ code: again.code, stdout: again.stdout }).toStrictEqual({ code: 0, stdout: first.stdout });
      }
      expect(await counts()).toStrictEqual(before);

      // The rest comes back (no --amount: what is left), held too; then nothing is left to return.
      const rest = await cli(['return', w]);
      expect(rest.code).toBe(0);
      const r2 = (JSON.parse(rest.stdout) as { transferId: string }).transferId;
      expect(JSON.parse(rest.stdout)).toMatchObject({ amount: 39.75, creditedTo: 'UNCLAIMED_RETURNS' });
      expect(await ledgerBalance(suspense)).toBe(plus(heldBefore, '100'));
      await refused(['return', w, '--amount', '0.01'], 'amount is more than what is left to reverse (0 ARS)');
      expect(await ledgerBalance(closed.uuid)).toBe('0.000000');
      await invariants();

      // The operator lists what is held: the application's two returns, oldest first, with what they add up to.
      const list = async (args: string[]) => {
        const result = await cli(['unclaimed', ...args]);
        expect({ code: result.code, stderr: result.stderr }).toStrictEqual({ code: 0, stderr: '' });
        return JSON.parse(result.stdout) as {
          items: { transferId: string; status: string }[];
          nextCursor: string | null;
          held: { currency: string; count: number; amount: number }[];
        };
      };
      const listed = await list(['--app', appA.appId]);
      const mine = listed.items.filter((item) => item.transferId === r1 || item.transferId === r2);
      expect(mine).toStrictEqual([
        {
          transferId: r1,
          returnOf: w,
          appId: appA.appId,
          accountId: closed.uuid,
          ownerType: 'USER',
          ownerId: owner,
          amount: 60.25,
          currency: 'ARS',
          returnedAt: expect.stringMatching(/Z$/),
          status: 'UNCLAIMED',
          paidOutAt: null,
          paidOutTo: null,
        },
        expect.objectContaining({ transferId: r2, amount: 39.75, status: 'UNCLAIMED' }),
      ]);
      expect(listed.items.every((item) => item.status === 'UNCLAIMED')).toBe(true);
      // `held` is UNCLAIMED_RETURNS's balance (every application's here: only A's accounts were closed).
      const everyone = await list([]);
      expect(everyone.held).toStrictEqual([
        { currency: 'ARS', count: everyone.items.length, amount: Number(await ledgerBalance(suspense)) },
      ]);
      expect((await list(['--app', appB.appId])).items).toStrictEqual([]);
      const firstPage = await list(['--app', appA.appId, '--limit', '1']);
      expect(firstPage.items).toHaveLength(1);
      const secondPage = await list(['--app', appA.appId, '--limit', '1', '--after', firstPage.nextCursor!]);
      expect(secondPage.items[0].transferId > firstPage.items[0].transferId).toBe(true);

      // Paying out: only into an ACTIVE account of the same owner, in the application of the closed one.
      const renewed = await openAccount(t.http, tokenA, appA.appId, owner);
      await refused(['pay-out', r1, '--to', s.uuid], "to: the account is not of the closed account's owner");
      await refused(['pay-out', r1, '--to', r.uuid], 'Account not found');
      await refused(['pay-out', r1, '--to', closed.uuid], 'Account not found');
      await refused(['pay-out', w, '--to', renewed.uuid], 'No unclaimed return with that id');
      await setStatus(t.http, tokenA, renewed.uuid, 'INACTIVE');
      await refused(['pay-out', r1, '--to', renewed.uuid], 'the account is INACTIVE');
      await setStatus(t.http, tokenA, renewed.uuid, 'ACTIVE');

      const paid = await cli(['pay-out', r1, '--to', renewed.uuid]);
      expect({ code: paid.code, stderr: paid.stderr }).toStrictEqual({ code: 0, stderr: '' });
      expect(JSON.parse(paid.stdout)).toMatchObject({
        transferId: r1,
        accountId: closed.uuid,
        amount: 60.25,
        status: 'PAID_OUT',
        paidOutAt: expect.stringMatching(/Z$/),
        paidOutTo: renewed.uuid,
      });
      expect(await ledgerBalance(renewed.uuid)).toBe('60.250000');
      expect(await ledgerBalance(suspense)).toBe(plus(heldBefore, '39.75'));
      expect(
        await t.dataSource.query(
          `SELECT e.kind, e.app_id, p.account_id, p.amount::text AS amount FROM journal_entries e
             JOIN postings p ON p.entry_id = e.id WHERE e.reference = $1 AND e.kind = 'UNCLAIMED_RETURN_PAYOUT'
            ORDER BY p.amount`,
          [r1],
        ),
      ).toStrictEqual([
        { kind: 'UNCLAIMED_RETURN_PAYOUT', app_id: appA.appId, account_id: suspense, amount: '-60.250000' },
        {
          kind: 'UNCLAIMED_RETURN_PAYOUT',
          app_id: appA.appId,
          account_id: renewed.uuid,
          amount: '60.250000',
        },
      ]);
      expect(
        await t.dataSource.query(
          `SELECT resource_type, resource_id, principal_type, action, outcome FROM audit_records
            WHERE action = 'transfers pay-out' ORDER BY id`,
        ),
      ).toStrictEqual([
        {
          resource_type: 'transfer',
          resource_id: r1,
          principal_type: 'cli',
          action: 'transfers pay-out',
          outcome: 'paid out',
        },
        {
          resource_type: 'account',
          resource_id: renewed.uuid,
          principal_type: 'cli',
          action: 'transfers pay-out',
          outcome: 'unclaimed return paid in',
        },
      ]);
      await invariants();

      // Run again: the same pay-out answers, nothing written; into another account it is refused.
      before = await counts();
      const again = await cli(['pay-out', r1, '--to', renewed.uuid]);
      expect({ code: again.code, stdout: again.stdout }).toStrictEqual({ code: 0, stdout: paid.stdout });
      expect(await counts()).toStrictEqual(before);
      await refused(['pay-out', r1, '--to', s.uuid], `the return was paid out to ${renewed.uuid} already`);

      // The list now holds the second one only; --all shows the first, paid out.
      expect((await list(['--app', appA.appId])).items.map((item) => item.transferId)).not.toContain(r1);
      expect((await list(['--app', appA.appId, '--all'])).items).toContainEqual(
        expect.objectContaining({ transferId: r1, status: 'PAID_OUT', paidOutTo: renewed.uuid }),
      );
      expect(await ledgerBalance(closed.uuid)).toBe('0.000000');
      await invariants();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000); // twenty-odd runs of the CLI, each a process that starts Nest
});
