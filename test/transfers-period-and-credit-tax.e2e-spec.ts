import { jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import { TransfersService } from '../src/modules/transfers/transfers.service.js';
import { LedgerService } from '../src/modules/wallet/ledger/ledger.service.js';
import { periodsOf } from '../src/modules/wallet/periods.js';
import { timeZoneMismatch } from '../src/common/database/time-zone.js';
import { accessToken, registerClient } from './support/auth.js';
import { bearer } from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { operadoOf, postTransfer, setLimits, transferBody } from './support/transfers.js';
import { createOwner, openAccount, setBalance } from './support/wallet.js';

const payer = (
  JSON.parse(readFileSync('config/counterparty-directory.json', 'utf8')) as {
    accounts: { number: string; titulares: string; cuit: string }[];
  }
).accounts[0];

/** Every timer and clock of the process stays real but `Date`, which reads `at` and goes on from there. */
function apiClockAt(at: Date): void {
  jest.useFakeTimers({
    now: at,
    advanceTimers: true,
    doNotFake: [
      'hrtime',
      'nextTick',
      'performance',
      'queueMicrotask',
      'requestAnimationFrame',
      'cancelAnimationFrame',
      'requestIdleCallback',
      'cancelIdleCallback',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'setTimeout',
      'clearTimeout',
    ],
  });
}

/**
 * Decision 0098: every credit pays TRANSFER_TAX_RATE on what arrives (an inbound credit from the rail too, with no
 * fee), and a movement is checked against and counted in the month and year of its own created_at, the database's
 * clock in the writing transaction, not the API's when the request arrived.
 */
describe('credits pay their tax; operated amounts in the period of created_at (decision 0098)', () => {
  let t: TestApp;
  let token: string;
  let appId: string;
  const tz = () => t.config.operationsTimeZone;

  beforeAll(async () => {
    t = await startTestApp({ env: { TRANSFER_TAX_RATE: '0.01' } });
    const client = await registerClient(t.app);
    appId = client.appId;
    token = await accessToken(t.http, client);
  });
  afterAll(async () => {
    jest.useRealTimers();
    await t.close();
  });

  const account = async (balance = 0) => {
    const opened = await openAccount(t.http, token, appId, await createOwner(t.http, token));
    if (balance > 0) await setBalance(t.http, token, opened.uuid, balance);
    return opened;
  };
  const inbound = (cvu: string, amount: number) =>
    t.app.get(TransfersService).inbound(
      {
        cvu,
        amount,
        fromIdentifier: payer.number,
        fromName: payer.titulares,
        fromTaxId: payer.cuit,
        concept: 'VAR',
      },
      cliActor('transfers inbound'),
    );
  /** The account's operated_amounts rows: period → [deposit, withdraw]. */
  const operated = async (accountId: string) =>
    Object.fromEntries(
      (
        (await t.dataSource.query(
          `SELECT period, deposit::text AS deposit, withdraw::text AS withdraw FROM operated_amounts
            WHERE account_id = $1`,
          [accountId],
        )) as { period: string; deposit: string; withdraw: string }[]
      ).map((row) => [row.period, [row.deposit, row.withdraw]]),
    );
  const createdAt = async (transferId: string) =>
    (
      (await t.dataSource.query(`SELECT created_at FROM transfers WHERE id = $1`, [transferId])) as {
        created_at: Date;
      }[]
    )[0].created_at;

  it('an inbound credit pays the tax on what arrives and no fee; its entry balances; ledger verify passes', async () => {
    const receiver = await account();
    const credit = await inbound(receiver.cvu, 250.75);

    // 250.75 × 0.01 = 2.5075, half-even to 2.51.
    const [row] = (await t.dataSource.query(`SELECT fees::text, taxes::text FROM transfers WHERE id = $1`, [
      credit.transferId,
    ])) as { fees: string; taxes: string }[];
    expect(row).toEqual({ fees: '0.000000', taxes: '2.510000' });
    const view = await request(t.http)
      .get(`/v1/wallet/transactions/${credit.transferId}`)
      .set('Authorization', bearer(token));
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({ amount: 250.75, fees: 0, taxes: 2.51 });

    const postings = (await t.dataSource.query(
      `SELECT coalesce(a.code, 'WALLET') AS account, p.amount::text AS amount
         FROM journal_entries e JOIN postings p ON p.entry_id = e.id JOIN ledger_accounts a ON a.id = p.account_id
        WHERE e.reference = $1 ORDER BY p.amount`,
      [credit.transferId],
    )) as { account: string; amount: string }[];
    expect(postings).toEqual([
      { account: 'SETTLEMENT', amount: '-250.750000' },
      { account: 'TAX_PAYABLE', amount: '2.510000' },
      { account: 'WALLET', amount: '248.240000' },
    ]);
    const balance = await request(t.http)
      .get(`/v1/wallet/accounts/${receiver.uuid}/balance`)
      .set('Authorization', bearer(token));
    expect((balance.body as { balance: number }).balance).toBe(248.24);
    // What arrived counts on the deposit side, as an internal transfer's receiver counts the amount.
    expect((await operadoOf(t.http, token, receiver.uuid)).monthDeposit).toBe(250.75);
    const report = await t.app.get(LedgerService).verify();
    expect(report.ok).toBe(true);
  });

  const fortyDaysAgo = () => new Date(Date.now() - 40 * 24 * 3600 * 1000);
  /** A transfer of 100 sent while the process's `Date` reads `at` (the database's clock stays real). */
  const transferWhileApiClockReads = async (
    at: Date,
    from: string,
    to: string,
  ): Promise<request.Response> => {
    apiClockAt(at);
    try {
      return await postTransfer(t.http, token, transferBody(from, to, 100));
    } finally {
      jest.useRealTimers();
    }
  };

  it('an internal transfer stamped by the API in an earlier month is counted in the month of its created_at', async () => {
    const sender = await account(1000);
    const receiver = await account();
    const earlier = fortyDaysAgo();
    const response = await transferWhileApiClockReads(earlier, sender.uuid, receiver.cvu);
    expect(response.status).toBe(201);
    const id = (response.body as { uuid: string }).uuid;
    const period = periodsOf(await createdAt(id), tz()).month;
    expect(periodsOf(earlier, tz()).month).not.toBe(period);
    expect(await operated(sender.uuid)).toEqual({ [period]: ['0.000000', '100.000000'] });
    expect(await operated(receiver.uuid)).toEqual({ [period]: ['100.000000', '0.000000'] });
  });

  it("a transfer made while the API's clock reads an earlier month is checked against its created_at month's limit", async () => {
    const sender = await account(1000);
    const receiver = await account();
    await setLimits(t.http, token, sender.uuid, {
      monthlyWithdrawLimit: 150,
      monthlyDepositLimit: 100_000,
      annualWithdrawLimit: 100_000,
      annualDepositLimit: 100_000,
    });
    const first = await postTransfer(t.http, token, transferBody(sender.uuid, receiver.cvu, 100));
    expect(first.status).toBe(201);
    const period = periodsOf(await createdAt((first.body as { uuid: string }).uuid), tz()).month;
    const earlier = fortyDaysAgo();
    expect(periodsOf(earlier, tz()).month).not.toBe(period);
    const second = await transferWhileApiClockReads(earlier, sender.uuid, receiver.cvu);
    // 100 + 100 is past this month's 150, whatever month the API's clock reads.
    expect(second.status).toBe(400);
    expect((second.body as { detail: { items: { path: string }[] } }).detail.items).toEqual([
      expect.objectContaining({ path: 'amount' }),
    ]);
    expect(await operated(sender.uuid)).toEqual({ [period]: ['0.000000', '100.000000'] });
  });

  it('an inbound credit made while the process clock reads an earlier month is counted in the month of its created_at', async () => {
    const receiver = await account();
    const earlier = new Date(Date.now() - 40 * 24 * 3600 * 1000);
    apiClockAt(earlier);
    let credit: { transferId: string };
    try {
      credit = await inbound(receiver.cvu, 80);
    } finally {
      jest.useRealTimers();
    }
    const period = periodsOf(await createdAt(credit.transferId), tz()).month;
    expect(periodsOf(earlier, tz()).month).not.toBe(period);
    expect(await operated(receiver.uuid)).toEqual({ [period]: ['80.000000', '0.000000'] });
  });
});

/**
 * The periods are taken in the database and the zone checked in the runtime: at start a process compares how both
 * read OPERATIONS_TIME_ZONE at four instants a season apart, and stops on a difference (decision 0098).
 */
describe('OPERATIONS_TIME_ZONE as PostgreSQL and the runtime read it', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it.each([
    'America/Argentina/Buenos_Aires',
    'UTC',
    'Europe/Madrid',
    'America/New_York',
    'Australia/Lord_Howe',
  ])('%s: the same local times, daylight saving included', async (zone) => {
    expect(await timeZoneMismatch(t.dataSource, zone)).toBeUndefined();
  });

  it("a database that fails otherwise is the database's failure, not the setting's: the error, not a mismatch", async () => {
    // A real data source whose server is gone: the query fails with no "time zone not recognized" code.
    const gone = new DataSource({ type: 'postgres', url: 'postgres://nobody@127.0.0.1:1/none' });
    await expect(timeZoneMismatch(gone, 'America/Argentina/Buenos_Aires')).rejects.toThrow();
  });

  it('names the difference when the database reads the zone otherwise', async () => {
    // A session whose zone names resolve elsewhere cannot be made; the comparison itself is what is checked here:
    // the runtime's reading of New York against the database's reading of Madrid, through the same statement.
    const mismatch = await timeZoneMismatch(
      {
        query: (sql: string, [, instants]: [string, string[]]) =>
          t.dataSource.query(sql, ['Europe/Madrid', instants]),
      } as never,
      'America/New_York',
    );
    expect(mismatch).toMatch(/^PostgreSQL reads \S+ as \S+ \S+ there, this runtime as \S+ \S+$/);
  });
});
