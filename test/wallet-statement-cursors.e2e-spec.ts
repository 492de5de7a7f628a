import { randomBytes, randomUUID } from 'node:crypto';
import { jest } from '@jest/globals';
import pg from 'pg';
import request from 'supertest';
import { ReadDatabase } from '../src/common/database/read-database.js';
import { instantMicros } from '../src/common/http/instant.js';
import { SigningKeysService } from '../src/modules/auth/signing-keys.service.js';
import type { StatementResponseDto } from '../src/modules/wallet/accounts/dto/statement.dto.js';
import {
  decodeStatementCursor,
  encodeStatementCursor,
  statementCursorKeys,
  type StatementCursorKeys,
} from '../src/modules/wallet/accounts/statement-cursor.js';
import { Money } from '../src/modules/wallet/money.js';
import { accessToken, type TestClient } from './support/auth.js';
import { bearer, expectValidation } from './support/identity.js';
import { preparedPlan, rowsRead } from './support/plans.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { startWithTwoApplications } from './support/two-applications.js';
import { createOwner, openAccount } from './support/wallet.js';

/** The JSON body, as the route's response DTO types it. */
type Statement = StatementResponseDto;

const WHOLE = { from: '2000-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' };
/** Where the four amounts of a cursor start (decision 0077's form: version, account, four instants, posting id). */
const AMOUNTS_AT = 1 + 16 + 5 * 8;

/**
 * A cursor's bytes and, for each of its amounts (opening, in, out, running), the offset of its last byte. The
 * amounts are encrypted (AES-CTR keeps each byte in its place), so their lengths come from the cursor as `keys`
 * open it: a head byte and the magnitude in millionths without leading zero bytes.
 */
function cursorBytes(cursor: string, keys: StatementCursorKeys[]): { bytes: Buffer; lastByteOf: number[] } {
  const bytes = Buffer.from(cursor, 'base64url');
  const { opening, totalIn, totalOut, running } = decodeStatementCursor(cursor, keys);
  const lastByteOf: number[] = [];
  let offset = AMOUNTS_AT;
  for (const amount of [opening, totalIn, totalOut, running]) {
    const millionths = BigInt(amount.abs().times(1_000_000).toFixed(0));
    const length = millionths === 0n ? 0 : Math.ceil(millionths.toString(16).length / 2);
    lastByteOf.push(offset + length);
    offset += 1 + length;
  }
  expect(offset + 16).toBe(bytes.length); // the MAC's 16 bytes follow the amounts
  return { bytes, lastByteOf };
}

const changed = (bytes: Buffer, at: number): string => {
  const copy = Buffer.from(bytes);
  copy[at] ^= 0x01;
  return copy.toString('base64url');
};

describe('signed statement cursors carry page 1’s figures (decision 0077)', () => {
  let t: TestApp;
  let appA: TestClient;
  let tokenA: string;
  let system: string;

  const statement = (uuid: string, query: Record<string, string | number>, token = tokenA, http = t.http) =>
    request(http)
      .get(`/v1/wallet/accounts/${uuid}/statement`)
      .query(query)
      .set('Authorization', bearer(token));
  /** An entry of `amount` (exact decimal text) on a wallet account against a system account. */
  const post = (uuid: string, amount: string, description = 'entry') =>
    t.dataSource.query(
      `SELECT ledger_post($1, 'TEST', $2, $3, 'test:cursor', ARRAY[$4::uuid, $5::uuid], ARRAY[$6::numeric, -$6::numeric], 'ARS')`,
      [appA.appId, `ref-${randomUUID()}`, description, uuid, system, amount],
    );
  const newAccount = async () =>
    (await openAccount(t.http, tokenA, appA.appId, await createOwner(t.http, tokenA))).uuid;
  /** Every page of a listing: each answer's text and its next cursor. */
  const allPages = async (
    uuid: string,
    query: Record<string, string | number>,
    accept = 'application/json',
  ) => {
    const served: { text: string; cursor?: string }[] = [];
    let cursor: string | undefined;
    do {
      const response = await statement(uuid, { ...query, ...(cursor ? { cursor } : {}) }).set(
        'Accept',
        accept,
      );
      expect(response.status).toBe(200);
      cursor = response.headers['x-next-cursor'] as string | undefined;
      served.push({ text: response.text, cursor });
    } while (cursor);
    return served;
  };
  const refusedAtCursor = (response: request.Response) => {
    const items = expectValidation(response);
    expect(items).toStrictEqual([{ path: 'cursor', message: expect.any(String), type: 'invalid' }]);
    return items[0].message;
  };

  beforeAll(async () => {
    ({ t, appA, tokenA } = await startWithTwoApplications('stmtcur'));
    system = randomUUID();
    await t.dataSource.query(
      `INSERT INTO ledger_accounts (id, kind, code, currency) VALUES ($1, 'SYSTEM', 'TEST', 'ARS')`,
      [system],
    );
  });
  afterAll(() => t.close());

  it('later pages answer byte for byte what one page of page 1’s period answers, JSON and CSV, to the millionth', async () => {
    const z = await newAccount();
    const amounts = [
      '123456789012345678.123456',
      '-0.000001',
      '25.5',
      '-1000.999999',
      '0.1',
      '-7',
      '3.000003',
    ];
    for (const amount of [...amounts, '12', '-0.5']) await post(z, amount);
    const first = (await statement(z, { ...WHOLE, limit: 1 })).body as Statement;
    // The whole history, and a period whose opening is not zero.
    for (const period of [WHOLE, { from: first.movements[0].postedAt, to: WHOLE.to }]) {
      const whole = await statement(z, { ...period, limit: 500 });
      const wholeCsv = (await statement(z, { ...period, limit: 500 }).set('Accept', 'text/csv')).text;
      const body = whole.body as Statement;
      expect(body.movements.length).toBeGreaterThan(6);
      const pages = await allPages(z, { ...period, limit: 2 });
      expect(pages).toHaveLength(Math.ceil(body.movements.length / 2));
      pages.forEach((page, k) => {
        const expected = JSON.stringify({ ...body, movements: body.movements.slice(2 * k, 2 * k + 2) });
        expect([k, page.text]).toStrictEqual([k, expected]);
      });
      const lines = wholeCsv.split('\r\n');
      const csvPages = await allPages(z, { ...period, limit: 2 }, 'text/csv');
      expect(csvPages).toHaveLength(pages.length);
      csvPages.forEach((page, k) => {
        const expected = [
          ...lines.slice(0, 2),
          ...lines.slice(2 + 2 * k, 4 + 2 * k).filter((line) => line.startsWith('MOVEMENT')),
          ...lines.slice(-4),
        ];
        expect([k, page.text]).toStrictEqual([k, expected.join('\r\n')]);
      });
      expect(wholeCsv).toContain(',123456789012345678.123456,');
      expect(wholeCsv).toContain(',-0.000001,');
    }
  });

  it('a changed, forged, unsigned or other account’s cursor is a 400 at cursor, and the statement reads nothing', async () => {
    const z = await newAccount();
    const other = await newAccount();
    for (const amount of ['500.25', '-10.000001', '7', '-3', '1']) {
      await post(z, amount);
      await post(other, amount);
    }
    const [m0, m1] = ((await statement(z, { ...WHOLE, limit: 500 })).body as Statement).movements;
    // A period after the first posting: every amount of the cursor is not zero.
    const period = { from: m0.postedAt, to: WHOLE.to };
    const cursor = (await statement(z, { ...period, limit: 1 })).headers['x-next-cursor'] as string;
    const ofOther = (await statement(other, { ...period, limit: 1 })).headers['x-next-cursor'] as string;
    const { bytes, lastByteOf } = cursorBytes(
      cursor,
      await statementCursorKeys(t.app.get(SigningKeysService)),
    );
    const [opening, totalIn, totalOut, running] = lastByteOf;
    const reads = jest.spyOn(t.app.get(ReadDatabase), 'query'); // calls through
    try {
      const cases: [string, string, string | undefined][] = [
        ['opening changed', changed(bytes, opening), undefined],
        ['total in changed', changed(bytes, totalIn), undefined],
        ['total out changed', changed(bytes, totalOut), undefined],
        ['running balance changed', changed(bytes, running), undefined],
        ['MAC changed', changed(bytes, bytes.length - 1), undefined],
        ['another account’s', ofOther, 'cursor is of another account'],
        // Decision 0063's form, unsigned: the account, the period and a position inside it.
        [
          'the earlier unsigned form',
          Buffer.from(
            [
              z,
              instantMicros(period.from),
              instantMicros(period.to),
              instantMicros(m1.postedAt),
              m1.postingId,
            ].join('|'),
          ).toString('base64url'),
          'cursor is of an earlier form of this route; ask for the first page again',
        ],
        [
          'signed with a key of the client’s own',
          encodeStatementCursor(
            {
              accountId: z,
              from: instantMicros(period.from),
              to: instantMicros(period.to),
              upTo: instantMicros(period.to),
              at: instantMicros(m1.postedAt),
              id: m1.postingId,
              opening: new Money('0'),
              totalIn: new Money('1000000'),
              totalOut: new Money('0'),
              running: new Money(String(m1.balance)),
            },
            { mac: randomBytes(32), cipher: randomBytes(32) },
          ),
          undefined,
        ],
      ];
      const unsigned =
        'cursor is not one this service signed, or its key was retired since; ask for the first page again';
      for (const [label, text, message] of cases) {
        for (const accept of ['application/json', 'text/csv']) {
          const response = await statement(z, { ...period, cursor: text }).set('Accept', accept);
          expect([label, accept, response.status]).toStrictEqual([label, accept, 400]);
          expect([label, refusedAtCursor(response)]).toStrictEqual([label, message ?? unsigned]);
        }
      }
      // Any bit of any byte.
      for (let i = 0; i < bytes.length; i++) {
        const response = await statement(z, { cursor: changed(bytes, i) });
        expect([i, response.status]).toStrictEqual([i, 400]);
        refusedAtCursor(response);
      }
      expect(reads).not.toHaveBeenCalled();
      // The cursor as the service wrote it is read as before.
      expect((await statement(z, { ...period, cursor })).status).toBe(200);
      expect(reads).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
    }
  });

  it('a later page reads only its own rows: on 20,000 postings, the statement it sends reads the page (EXPLAIN ANALYZE, custom and generic plans)', async () => {
    const z = await newAccount();
    // 20,000 entries of +1, one second apart, the last one 20,000 s ago.
    await t.dataSource.transaction(async (manager) => {
      await manager.query(
        `INSERT INTO journal_entries (id, app_id, kind, description, actor, created_at)
         SELECT md5('cursor' || $1 || i)::uuid, $2, 'TEST', 'bulk', 'test:bulk', now() - make_interval(secs => 40001 - i)
           FROM generate_series(1, 20000) AS i`,
        [z, appA.appId],
      );
      await manager.query(
        `INSERT INTO postings (entry_id, account_id, amount, currency, created_at)
         SELECT md5('cursor' || $1 || i)::uuid, a.id, a.amount, 'ARS', now() - make_interval(secs => 40001 - i)
           FROM generate_series(1, 20000) AS i,
                (VALUES ($1::uuid, 1::numeric), ($2::uuid, -1::numeric)) AS a(id, amount)`,
        [z, system],
      );
      await manager.query(`UPDATE ledger_accounts SET balance = balance + 20000 WHERE id = $1`, [z]);
    });
    await t.dataSource.query('VACUUM ANALYZE postings');
    const page1 = await statement(z, { limit: 100 });
    const cursor = page1.headers['x-next-cursor'] as string;
    const reads = jest.spyOn(t.app.get(ReadDatabase), 'query'); // calls through
    let sent: unknown[];
    let page2: Statement;
    try {
      const response = await statement(z, { limit: 100, cursor });
      expect(response.status).toBe(200);
      page2 = response.body as Statement;
      expect(reads).toHaveBeenCalledTimes(1);
      sent = reads.mock.calls[0];
    } finally {
      reads.mockRestore();
    }
    expect({ ...page2, movements: [] }).toStrictEqual({ ...(page1.body as Statement), movements: [] });
    expect([page2.totalIn, page2.closingBalance]).toStrictEqual([20000, 20000]);
    expect(page2.movements.map((m) => m.balance)).toStrictEqual(
      Array.from({ length: 100 }, (_v, i) => 101 + i),
    );

    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const [text, values] = sent as [string, unknown[]];
      for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
        const postingsRead = rowsRead(await preparedPlan(db, text, values, mode), 'postings');
        // The page's LIMIT is 101 (listFetchSize); before: the 20,000 of the period for the totals, and its page.
        expect([mode, postingsRead <= 101 + 1]).toStrictEqual([mode, true]);
      }
    } finally {
      await db.end();
    }
  }, 60_000);

  it('postings written after page 1 inside its period (a to in the future) wait for a new page 1: later pages keep page 1’s figures and rows, and their balances run to its closing', async () => {
    const z = await newAccount();
    for (const amount of ['10', '-2.5', '7', '1.25', '-3']) await post(z, amount, 'before page 1');
    const whole = (await statement(z, { ...WHOLE, limit: 500 })).body as Statement;
    const served: Statement[] = [];
    let response = await statement(z, { ...WHOLE, limit: 2 });
    for (;;) {
      expect(response.status).toBe(200);
      served.push(response.body as Statement);
      const cursor = response.headers['x-next-cursor'] as string | undefined;
      if (!cursor) break;
      // A posting inside the period, after every row of it: the keyset puts it on a later page.
      await post(z, '100', 'after page 1');
      response = await statement(z, { ...WHOLE, limit: 2, cursor });
    }
    expect(served).toHaveLength(3);
    for (const page of served) expect({ ...page, movements: [] }).toStrictEqual({ ...whole, movements: [] });
    expect(served.flatMap((page) => page.movements)).toStrictEqual(whole.movements);
    expect(served.at(-1)?.movements.at(-1)?.balance).toBe(whole.closingBalance);
    // A new page 1 has them.
    const again = (await statement(z, { ...WHOLE, limit: 500 })).body as Statement;
    expect(again.movements.length - whole.movements.length).toBe(2);
    expect(again.closingBalance).toBe(whole.closingBalance + 200);
  });

  it('a posting inserted before page 1 and committed after it (decision 0063’s case left open): later pages keep page 1’s rows and figures, and their balances run to its closing', async () => {
    const z = await newAccount();
    for (const amount of ['10', '1', '2']) await post(z, amount, 'committed');
    const late = new pg.Client({ connectionString: t.databaseUrl });
    await late.connect();
    try {
      // As every writer does: the account's ledger row first, then the postings (at clock_timestamp()).
      await late.query('BEGIN');
      await late.query('SELECT 1 FROM ledger_accounts WHERE id = $1 FOR UPDATE', [z]);
      await late.query(
        `SELECT ledger_post($1, 'TEST', 'late', 'late', 'test:cursor', ARRAY[$2::uuid, $3::uuid], ARRAY[1000, -1000], 'ARS')`,
        [appA.appId, z, system],
      );
      // Page 1 without to: its now is after the late posting's time, but its snapshot does not hold it.
      const page1 = await statement(z, { limit: 2 });
      const one = page1.body as Statement;
      expect(one.movements.map((m) => m.amount)).toStrictEqual([10, 1]);
      expect(one.closingBalance).toBe(13);
      await late.query('COMMIT');
      const page2 = (await statement(z, { limit: 2, cursor: page1.headers['x-next-cursor'] as string }))
        .body as Statement;
      expect({ ...page2, movements: [] }).toStrictEqual({ ...one, movements: [] });
      expect(page2.movements.map((m) => [m.amount, m.balance])).toStrictEqual([[2, 13]]);
      // A new page 1 has it, inside a period that ends where page 1's did.
      const again = (await statement(z, { to: one.to, limit: 500 })).body as Statement;
      expect(again.movements.map((m) => m.amount)).toStrictEqual([10, 1, 2, 1000]);
    } finally {
      await late.end();
    }
  });

  it('a cursor whose period’s last posting no database holds is a 500 with the usual body, not a page short of its rows', async () => {
    const z = await newAccount();
    for (const amount of ['1', '2', '3']) await post(z, amount);
    const whole = (await statement(z, { ...WHOLE, limit: 500 })).body as Statement;
    const [m0, , m2] = whole.movements;
    const [key] = await statementCursorKeys(t.app.get(SigningKeysService));
    // Signed as the service signs, but its upTo 1 µs after the period's last posting: no posting is there. Postings
    // are never deleted, so no database can answer such a page (decision 0077, amended 2026-12-02).
    const cursor = encodeStatementCursor(
      {
        accountId: z,
        from: instantMicros(WHOLE.from),
        to: instantMicros(WHOLE.to),
        upTo: instantMicros(m2.postedAt) + 1n,
        at: instantMicros(m0.postedAt),
        id: m0.postingId,
        opening: new Money('0'),
        totalIn: new Money('6'),
        totalOut: new Money('0'),
        running: new Money('1'),
      },
      key,
    );
    const response = await statement(z, { ...WHOLE, cursor });
    expect(response.status).toBe(500);
    expect(response.body).toStrictEqual({
      name: 'InternalServerError',
      message: 'Internal server error',
      detail: { trackingId: response.headers['x-request-id'] },
    });
  });

  // Last in this describe: a second application in this process registers its passport strategies process-wide,
  // and once it is closed the first application's requests go through them (a closed DataSource): a test after
  // this one failed with 401 or 500 depending on timing.
  it('another API process on the key file takes the cursor; after keys rotate it still does, after keys retire of its key it is a 400 that asks for page 1 again', async () => {
    const z = await newAccount();
    for (const amount of ['10', '-2.5', '7', '1.25', '-3']) await post(z, amount);
    const second = await startTestApp({
      databaseUrl: t.databaseUrl,
      env: { SIGNING_KEYS_FILE: t.config.signingKeysFile, SIGNING_KEY_ACTIVATION_SECONDS: '0' },
    });
    try {
      const page1 = await statement(z, { ...WHOLE, limit: 2 });
      const cursor = page1.headers['x-next-cursor'] as string;
      const here = await statement(z, { ...WHOLE, limit: 2, cursor });
      const there = await statement(z, { ...WHOLE, limit: 2, cursor }, tokenA, second.http);
      expect([here.status, there.status]).toStrictEqual([200, 200]);
      expect(there.text).toBe(here.text);

      const keys = second.app.get(SigningKeysService);
      const old = (await keys.current()).kid;
      await keys.rotate(); // signs at once (SIGNING_KEY_ACTIVATION_SECONDS=0); the old key stays published
      const rotated = await statement(z, { ...WHOLE, limit: 2, cursor }, tokenA, second.http);
      expect(rotated.status).toBe(200);
      expect(rotated.text).toBe(here.text);
      const newCursor = (await statement(z, { ...WHOLE, limit: 2 }, tokenA, second.http)).headers[
        'x-next-cursor'
      ] as string;

      await keys.retire(old);
      // tokenA was signed with the retired key too: a token of the new one.
      const token = await accessToken(second.http, appA);
      const refused = await statement(z, { ...WHOLE, limit: 2, cursor }, token, second.http);
      expect(refusedAtCursor(refused)).toBe(
        'cursor is not one this service signed, or its key was retired since; ask for the first page again',
      );
      const fresh = await statement(z, { ...WHOLE, limit: 2, cursor: newCursor }, token, second.http);
      expect([fresh.status, fresh.text]).toStrictEqual([200, here.text]);
    } finally {
      await second.close();
    }
  });
});
