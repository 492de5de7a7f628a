import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import {
  LedgerService,
  SYSTEM_ACCOUNTS,
  systemAccountId,
  type VerifyReport,
} from '../src/modules/wallet/ledger/ledger.service.js';
import { Money } from '../src/modules/wallet/money.js';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import {
  bearer,
  expectNotFound,
  expectUnauthorized,
  expectValidation,
  type ValidationItem,
} from './support/identity.js';
import { runCli } from './support/processes.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import {
  cachedBalance,
  createOwner,
  openAccount,
  postingsOfEntriesTouching,
  UUID,
  type AccountInfo,
} from './support/wallet.js';

const byPath = (items: ValidationItem[]) => Object.fromEntries(items.map((item) => [item.path, item.type]));

/** Decimal strings compared as decimals: NUMERIC(24,6) text ("10.500000") against "10.5". */
const sameAmount = (a: string, b: string) =>
  Number.parseFloat(a) === Number.parseFloat(b) && trim(a) === trim(b);
const trim = (value: string) => (value.includes('.') ? value.replace(/0+$/, '').replace(/\.$/, '') : value);

/** Sums decimal strings exactly (in millionths, as BigInt). */
function sumExact(values: string[]): string {
  const micros = values.reduce((acc, value) => {
    const [whole, fraction = ''] = value.replace('-', '').split('.');
    const magnitude = BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6));
    return acc + (value.startsWith('-') ? -magnitude : magnitude);
  }, 0n);
  const sign = micros < 0n ? '-' : '';
  const abs = micros < 0n ? -micros : micros;
  return trim(`${sign}${abs / 1_000_000n}.${(abs % 1_000_000n).toString().padStart(6, '0')}`);
}

describe('wallet balances on the double-entry ledger (real database)', () => {
  let t: TestApp;
  let app: TestClient;
  let token: string;
  let ledger: LedgerService;
  const ADJUSTMENTS = systemAccountId('ADJUSTMENTS', 'ARS');

  beforeAll(async () => {
    t = await startTestApp();
    app = await registerClient(t.app, 'ledger-app');
    token = await accessToken(t.http, app);
    ledger = t.app.get(LedgerService);
  });
  afterAll(() => t.close());

  const api = () => request(t.http);
  const balancePath = (uuid: string) => `/v1/wallet/accounts/${uuid}/balance`;
  const getBalance = (uuid: string, as = token) =>
    api().get(balancePath(uuid)).set('Authorization', bearer(as));
  const putBalance = (uuid: string, body: object, method: 'post' | 'patch' = 'post', as = token) =>
    api()[method](balancePath(uuid)).set('Authorization', bearer(as)).send(body);
  const open = async (): Promise<AccountInfo & { ownerId: string }> => {
    const ownerId = await createOwner(t.http, token);
    return { ...(await openAccount(t.http, token, app.appId, ownerId)), ownerId };
  };
  const postingCount = async () =>
    ((await t.dataSource.query(`SELECT count(*)::int AS n FROM postings`)) as { n: number }[])[0].n;

  describe('GET, POST and PATCH …/balance', () => {
    it('GET returns BalanceResponse to the application and to the owner', async () => {
      const account = await open();
      for (const as of [token, await subjectToken(app, account.ownerId)]) {
        const response = await getBalance(account.uuid, as);
        expect(response.status).toBe(200);
        expect(response.body).toStrictEqual({
          id: expect.stringMatching(UUID),
          accountId: account.uuid,
          balance: 0,
        });
      }
    });

    it('POST and PATCH set the balance by posting the difference against the adjustments account', async () => {
      const account = await open();
      const set = await putBalance(account.uuid, { balance: 150.25 });
      expect(set.status).toBe(200);
      expect(set.body).toStrictEqual({ message: expect.any(String) });
      expect((await getBalance(account.uuid)).body.balance).toBe(150.25);
      const patched = await putBalance(account.uuid, { balance: 100 }, 'patch');
      expect(patched.status).toBe(200);
      expect(patched.body).toStrictEqual({ message: expect.any(String) });
      expect((await getBalance(account.uuid)).body.balance).toBe(100);
      expect(
        (await api().get(`/v1/wallet/accounts/${account.uuid}`).set('Authorization', bearer(token))).body
          .balance,
      ).toBe(100);

      const rows = await postingsOfEntriesTouching(t.dataSource, account.uuid);
      expect(rows).toHaveLength(4);
      const entries = [...new Set(rows.map((row) => row.entry_id))];
      expect(entries).toHaveLength(2);
      const expected = [
        ['150.25', '-150.25'],
        ['-50.25', '50.25'],
      ];
      entries.forEach((entryId, i) => {
        const lines = rows.filter((row) => row.entry_id === entryId);
        expect(lines.map((line) => line.account_id)).toStrictEqual([account.uuid, ADJUSTMENTS]);
        expect(lines.map((line) => trim(line.amount))).toStrictEqual(expected[i]);
        expect(sumExact(lines.map((line) => line.amount))).toBe('0');
        for (const line of lines) {
          expect(line).toMatchObject({
            kind: 'BALANCE_ADJUSTMENT',
            actor: `client:${app.appId}`,
            currency: 'ARS',
            reference: account.uuid,
          });
        }
      });
      // The other side is the ADJUSTMENTS system account.
      expect(
        await t.dataSource.query(`SELECT kind, code, currency FROM ledger_accounts WHERE id = $1`, [
          ADJUSTMENTS,
        ]),
      ).toStrictEqual([{ kind: 'SYSTEM', code: 'ADJUSTMENTS', currency: 'ARS' }]);
      expect(
        await t.dataSource.query(`SELECT app_id FROM journal_entries WHERE id = ANY($1::uuid[])`, [entries]),
      ).toStrictEqual([{ app_id: app.appId }, { app_id: app.appId }]);
      // The cached balance equals the sum of the account's postings.
      expect(sameAmount(await cachedBalance(t.dataSource, account.uuid), '100')).toBe(true);
    });

    it('never overwrites in place: each change adds postings; setting the same balance adds none', async () => {
      const account = await open();
      const before = await postingCount();
      await putBalance(account.uuid, { balance: 10 }).expect(200);
      expect(await postingCount()).toBe(before + 2);
      await putBalance(account.uuid, { balance: 10 }, 'patch').expect(200);
      expect(await postingCount()).toBe(before + 2);
      await putBalance(account.uuid, { balance: 0 }).expect(200);
      expect(await postingCount()).toBe(before + 4);
      expect((await getBalance(account.uuid)).body.balance).toBe(0);
      const rows = await postingsOfEntriesTouching(t.dataSource, account.uuid);
      expect(
        rows.filter((row) => row.account_id === account.uuid).map((row) => trim(row.amount)),
      ).toStrictEqual(['10', '-10']);
    });

    it('decimal edge cases: 0.1 then 0.3 then 0.2 are exact', async () => {
      const account = await open();
      for (const balance of [0.1, 0.3, 0.2]) {
        await putBalance(account.uuid, { balance }).expect(200);
        expect((await getBalance(account.uuid)).body.balance).toBe(balance);
      }
      expect(await cachedBalance(t.dataSource, account.uuid)).toBe('0.200000');
      const own = (await postingsOfEntriesTouching(t.dataSource, account.uuid)).filter(
        (row) => row.account_id === account.uuid,
      );
      // +0.1, +0.2 (0.1 + 0.2 = 0.3, exactly), −0.1.
      expect(own.map((row) => row.amount)).toStrictEqual(['0.100000', '0.200000', '-0.100000']);
      expect(sumExact(own.map((row) => row.amount))).toBe('0.2');
      // The largest amount is kept exactly, and back to zero exactly.
      await putBalance(account.uuid, { balance: 999_999_999_999.99 }).expect(200);
      expect((await getBalance(account.uuid)).body.balance).toBe(999_999_999_999.99);
      expect(await cachedBalance(t.dataSource, account.uuid)).toBe('999999999999.990000');
      await putBalance(account.uuid, { balance: 0 }).expect(200);
      expect(await cachedBalance(t.dataSource, account.uuid)).toBe('0.000000');
    });

    it('refuses 3 decimals, negative, very large, non-numbers, missing and extra fields: 400 at balance; nothing posted', async () => {
      const account = await open();
      await putBalance(account.uuid, { balance: 5 }).expect(200);
      const before = await postingCount();
      for (const [body, expected] of [
        [{ balance: 0.001 }, { balance: 'invalid' }],
        [{ balance: 10.005 }, { balance: 'invalid' }],
        [{ balance: 0.1 + 0.2 }, { balance: 'invalid' }],
        [{ balance: -1 }, { balance: 'invalid' }],
        [{ balance: 1_000_000_000_000 }, { balance: 'invalid' }],
        [{ balance: 1e300 }, { balance: 'invalid' }],
        [{ balance: '10' }, { balance: 'invalid' }],
        [{ balance: true }, { balance: 'invalid' }],
        [{ balance: null }, { balance: 'required' }],
        [{}, { balance: 'required' }],
        [{ balance: 10, currency: 'ARS' }, { currency: 'invalid' }],
      ] as const) {
        for (const method of ['post', 'patch'] as const) {
          expect(byPath(expectValidation(await putBalance(account.uuid, body, method)))).toStrictEqual(
            expected,
          );
        }
      }
      expect(await postingCount()).toBe(before);
      expect((await getBalance(account.uuid)).body.balance).toBe(5);
    });

    it('POST and PATCH are for client credentials only: a user token gets 401, even its own account', async () => {
      const account = await open();
      const own = await subjectToken(app, account.ownerId);
      const before = await postingCount();
      expectUnauthorized(await putBalance(account.uuid, { balance: 10 }, 'post', own));
      expectUnauthorized(await putBalance(account.uuid, { balance: 10 }, 'patch', own));
      expect(await postingCount()).toBe(before);
    });

    it('an unknown or deleted account is 404', async () => {
      const unknown = randomUUID();
      expectNotFound(await getBalance(unknown), unknown);
      expectNotFound(await putBalance(unknown, { balance: 1 }), unknown);
      const account = await open();
      await api()
        .delete(`/v1/wallet/accounts/${account.uuid}`)
        .set('Authorization', bearer(token))
        .expect(200);
      expectNotFound(await getBalance(account.uuid), account.uuid);
      expectNotFound(await putBalance(account.uuid, { balance: 1 }, 'patch'), account.uuid);
    });
  });

  describe('concurrency', () => {
    it('100 parallel adjustments: no lost update; each entry moves from the last committed balance to its target', async () => {
      const account = await open();
      // 100 distinct targets (none is 0, the opening balance), half through POST, half through PATCH.
      const targets = Array.from({ length: 100 }, (_, i) => Number(((i + 1) * 1.37).toFixed(2)));
      const responses = await Promise.all(
        targets.map((balance, i) => putBalance(account.uuid, { balance }, i % 2 === 0 ? 'post' : 'patch')),
      );
      expect(responses.map((response) => response.status)).toStrictEqual(Array(100).fill(200));

      const own = (await postingsOfEntriesTouching(t.dataSource, account.uuid)).filter(
        (row) => row.account_id === account.uuid,
      );
      // Every request changed the balance, so there is one entry per request.
      expect(own).toHaveLength(100);
      // Replaying the postings in commit order (posting ids are taken under the account lock), the balance after
      // each entry is the target of one request: with a lost update it would be some other number.
      const running: string[] = [];
      let balance = '0';
      for (const row of own) {
        balance = sumExact([balance, row.amount]);
        running.push(balance);
      }
      const expectedTargets = targets.map((target) => trim(target.toFixed(2)));
      expect([...running].sort()).toStrictEqual([...expectedTargets].sort());
      const last = running[running.length - 1];
      expect((await getBalance(account.uuid)).body.balance).toBe(Number(last));
      expect(sameAmount(await cachedBalance(t.dataSource, account.uuid), last)).toBe(true);

      const report = await ledger.verify();
      expect(report).toMatchObject({ ok: true, unbalancedEntries: [], balanceMismatches: [] });
    });

    it('half the requests set 10 and half 20: the final balance is one of them and every entry is ±10 or the first move', async () => {
      const account = await open();
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, i) => putBalance(account.uuid, { balance: i % 2 === 0 ? 10 : 20 })),
      );
      expect(responses.every((response) => response.status === 200)).toBe(true);
      const final = (await getBalance(account.uuid)).body.balance as number;
      expect([10, 20]).toContain(final);
      const own = (await postingsOfEntriesTouching(t.dataSource, account.uuid)).filter(
        (row) => row.account_id === account.uuid,
      );
      expect(['10', '20']).toContain(trim(own[0].amount));
      for (const row of own.slice(1)) expect(['10', '-10']).toContain(trim(row.amount));
      expect(sumExact(own.map((row) => row.amount))).toBe(String(final));
    });

    it('parallel adjustments on many accounts keep the ledger consistent', async () => {
      const accounts = await Promise.all(Array.from({ length: 8 }, () => open()));
      const responses = await Promise.all(
        accounts.flatMap((account, i) =>
          Array.from({ length: 6 }, (_, j) => putBalance(account.uuid, { balance: (i + 1) * 10 + j * 0.01 })),
        ),
      );
      expect(responses.every((response) => response.status === 200)).toBe(true);
      for (const account of accounts) {
        const own = (await postingsOfEntriesTouching(t.dataSource, account.uuid)).filter(
          (row) => row.account_id === account.uuid,
        );
        expect(
          sameAmount(await cachedBalance(t.dataSource, account.uuid), sumExact(own.map((row) => row.amount))),
        ).toBe(true);
      }
      expect((await ledger.verify()).ok).toBe(true);
    });
  });

  describe('ledger invariants in the database', () => {
    const someEntry = async () => {
      const account = await open();
      await putBalance(account.uuid, { balance: 3.33 }).expect(200);
      const [row] = (await t.dataSource.query(
        `SELECT id::text AS id, entry_id FROM postings WHERE account_id = $1`,
        [account.uuid],
      )) as { id: string; entry_id: string }[];
      return { account, postingId: row.id, entryId: row.entry_id };
    };

    /** Two fresh system accounts (no cached balance) for raw entries that must not disturb wallet balances. */
    const systemPair = async (): Promise<[string, string]> => {
      const [left, right] = [randomUUID(), randomUUID()];
      await t.dataSource.query(
        `INSERT INTO ledger_accounts (id, kind, code, currency) VALUES ($1, 'SYSTEM', 'TEST', 'ARS'), ($2, 'SYSTEM', 'TEST', 'ARS')`,
        [left, right],
      );
      return [left, right];
    };

    it('refuses UPDATE, DELETE and TRUNCATE on postings and journal_entries', async () => {
      const { postingId, entryId } = await someEntry();
      for (const sql of [
        `UPDATE postings SET amount = amount * 2 WHERE id = ${postingId}`,
        `DELETE FROM postings WHERE id = ${postingId}`,
        `UPDATE journal_entries SET actor = 'someone else' WHERE id = '${entryId}'`,
        `DELETE FROM journal_entries WHERE id = '${entryId}'`,
        `TRUNCATE postings`,
        `TRUNCATE journal_entries CASCADE`,
      ]) {
        await expect(t.dataSource.query(sql)).rejects.toThrow(/append-only/);
      }
      expect(
        await t.dataSource.query(
          `SELECT amount::text AS amount FROM postings WHERE entry_id = $1 ORDER BY id`,
          [entryId],
        ),
      ).toStrictEqual([{ amount: '3.330000' }, { amount: '-3.330000' }]);
      expect(
        await t.dataSource.query(`SELECT actor FROM journal_entries WHERE id = $1`, [entryId]),
      ).toStrictEqual([{ actor: `client:${app.appId}` }]);
    });

    it('never deletes an account or an application, which the money path names through unenforced keys (decision 0046)', async () => {
      const { account } = await someEntry();
      for (const sql of [
        `DELETE FROM wallet_accounts WHERE id = '${account.uuid}'`,
        `DELETE FROM ledger_accounts WHERE id = '${account.uuid}'`,
        `DELETE FROM applications WHERE id = '${app.appId}'`,
        `TRUNCATE wallet_accounts CASCADE`,
        `TRUNCATE ledger_accounts CASCADE`,
        `TRUNCATE applications CASCADE`,
      ]) {
        await expect(t.dataSource.query(sql)).rejects.toThrow(
          /are never deleted: the money path's rows refer to them/,
        );
      }
      expect((await getBalance(account.uuid)).body.balance).toBe(3.33);
      expect(
        await t.dataSource.query(
          `SELECT conname FROM pg_constraint WHERE contype = 'f' AND NOT conenforced ORDER BY conname`,
        ),
      ).toStrictEqual(
        [
          'FK_operated_amounts_account',
          'FK_postings_account',
          'FK_postings_entry',
          'FK_transfers_account',
          'FK_webhook_events_app',
        ].map((conname) => ({ conname })),
      );
    });

    it('refuses an entry that names an account that does not exist, and writes nothing', async () => {
      const [left] = await systemPair();
      const ghost = randomUUID();
      const entries = async () =>
        ((await t.dataSource.query(`SELECT count(*)::int AS n FROM journal_entries`)) as { n: number }[])[0]
          .n;
      const before = await entries();
      await expect(
        ledger.post(t.dataSource.manager, {
          appId: app.appId,
          kind: 'TEST',
          actor: 'test',
          lines: [
            { accountId: left, amount: new Money('1'), currency: 'ARS' },
            { accountId: ghost, amount: new Money('-1'), currency: 'ARS' },
          ],
        }),
      ).rejects.toThrow(/names an account that does not exist/);
      expect(await entries()).toBe(before);
    });

    it('refuses a zero posting', async () => {
      const { entryId, account } = await someEntry();
      await expect(
        t.dataSource.query(
          `INSERT INTO postings (entry_id, account_id, amount, currency) VALUES ($1, $2, 0, 'ARS')`,
          [entryId, account.uuid],
        ),
      ).rejects.toThrow(/CHK_postings_amount/);
    });

    it('refuses to commit a negative wallet balance, whoever writes it; below zero inside a transaction is allowed', async () => {
      const { account } = await someEntry(); // 3.33
      const balanceOf = async () =>
        (
          (await t.dataSource.query(`SELECT balance::text AS balance FROM ledger_accounts WHERE id = $1`, [
            account.uuid,
          ])) as { balance: string }[]
        )[0].balance;
      const move = (amount: string) =>
        [
          { accountId: account.uuid, amount: new Money(amount), currency: 'ARS' },
          { accountId: ADJUSTMENTS, amount: new Money(amount).negated(), currency: 'ARS' },
        ] as const;
      const refusal = {
        code: '23514',
        message: `wallet account ${account.uuid} would end the transaction with a negative balance`,
      };
      await expect(
        t.dataSource.query(`UPDATE ledger_accounts SET balance = -0.01 WHERE id = $1`, [account.uuid]),
      ).rejects.toMatchObject(refusal);
      // A balanced entry that takes more than the balance: the commit fails, and the entry with it.
      const before = await postingCount();
      await expect(
        t.dataSource.transaction((manager) =>
          ledger.post(manager, { appId: app.appId, kind: 'TEST', actor: 'test', lines: [...move('-3.34')] }),
        ),
      ).rejects.toMatchObject(refusal);
      expect(await postingCount()).toBe(before);
      expect(await balanceOf()).toBe('3.330000');
      // Below zero between two entries of one transaction, zero at its end (as a group posts an external hold
      // before its incoming internal amounts): committed.
      await t.dataSource.transaction(async (manager) => {
        await ledger.post(manager, {
          appId: app.appId,
          kind: 'TEST',
          actor: 'test',
          lines: [...move('-3.34')],
        });
        await ledger.post(manager, {
          appId: app.appId,
          kind: 'TEST',
          actor: 'test',
          lines: [...move('0.01')],
        });
      });
      expect(await balanceOf()).toBe('0.000000');
      // System rows (which keep no cached balance) are not concerned.
      const [system] = await systemPair();
      await t.dataSource.query(`UPDATE ledger_accounts SET balance = -1 WHERE id = $1`, [system]);
      await t.dataSource.query(`UPDATE ledger_accounts SET balance = 0 WHERE id = $1`, [system]);
    });

    it('an unbalanced entry is refused by the INSERT of its postings, and leaves nothing behind', async () => {
      const account = await open();
      const entryId = randomUUID();
      const before = await postingCount();
      let afterInsert = false;
      await expect(
        t.dataSource.transaction(async (manager) => {
          await manager.query(
            `INSERT INTO journal_entries (id, app_id, kind, actor) VALUES ($1, $2, 'TEST', 'test:raw-sql')`,
            [entryId, app.appId],
          );
          await manager.query(
            `INSERT INTO postings (entry_id, account_id, amount, currency) VALUES ($1, $2, 10, 'ARS')`,
            [entryId, account.uuid],
          );
          afterInsert = true;
        }),
      ).rejects.toThrow(new RegExp(`journal entry ${entryId} does not balance in ARS`));
      // The statement itself failed (decision 0049): the check does not wait for the commit.
      expect(afterInsert).toBe(false);
      expect(await postingCount()).toBe(before);
      expect(
        await t.dataSource.query(`SELECT id FROM journal_entries WHERE id = $1`, [entryId]),
      ).toStrictEqual([]);

      // Balanced in amount but across two currencies is unbalanced in each.
      const [left, right] = await systemPair();
      await expect(
        t.dataSource.transaction(async (manager) => {
          const id = randomUUID();
          await manager.query(
            `INSERT INTO journal_entries (id, kind, actor) VALUES ($1, 'TEST', 'test:raw-sql')`,
            [id],
          );
          await manager.query(
            `INSERT INTO postings (entry_id, account_id, amount, currency)
             VALUES ($1, $2, 10, 'ARS'), ($1, $3, -10, 'USD')`,
            [id, left, right],
          );
        }),
      ).rejects.toThrow(/does not balance/);
      expect(await postingCount()).toBe(before);
    });

    it('each INSERT balances every entry it writes to: one balanced statement passes, a split entry does not', async () => {
      const [left, right] = await systemPair();
      const before = await postingCount();
      // Two entries in one statement, each balanced: one check for the statement, and it passes.
      const [first, second] = [randomUUID(), randomUUID()];
      await t.dataSource.transaction(async (manager) => {
        await manager.query(
          `INSERT INTO journal_entries (id, kind, actor) VALUES ($1, 'TEST', 'test:raw-sql'), ($2, 'TEST', 'test:raw-sql')`,
          [first, second],
        );
        await manager.query(
          `INSERT INTO postings (entry_id, account_id, amount, currency)
           VALUES ($1, $3, 7.5, 'ARS'), ($1, $4, -7.5, 'ARS'), ($2, $3, -2, 'ARS'), ($2, $4, 2, 'ARS')`,
          [first, second, left, right],
        );
      });
      expect(await postingCount()).toBe(before + 4);

      // One entry's postings split over two statements: the first is refused, though the second would balance it.
      const split = randomUUID();
      let secondWritten = false;
      await expect(
        t.dataSource.transaction(async (manager) => {
          await manager.query(
            `INSERT INTO journal_entries (id, kind, actor) VALUES ($1, 'TEST', 'test:raw-sql')`,
            [split],
          );
          await manager.query(
            `INSERT INTO postings (entry_id, account_id, amount, currency) VALUES ($1, $2, 7.5, 'ARS')`,
            [split, left],
          );
          await manager.query(
            `INSERT INTO postings (entry_id, account_id, amount, currency) VALUES ($1, $2, -7.5, 'ARS')`,
            [split, right],
          );
          secondWritten = true;
        }),
      ).rejects.toThrow(new RegExp(`journal entry ${split} does not balance in ARS`));
      expect(secondWritten).toBe(false);
      expect(await postingCount()).toBe(before + 4);

      // Two entries in one statement, one of them unbalanced: the whole statement is refused, naming that one.
      const [ok, bad] = [randomUUID(), randomUUID()];
      await expect(
        t.dataSource.transaction(async (manager) => {
          await manager.query(
            `INSERT INTO journal_entries (id, kind, actor) VALUES ($1, 'TEST', 'test:raw-sql'), ($2, 'TEST', 'test:raw-sql')`,
            [ok, bad],
          );
          await manager.query(
            `INSERT INTO postings (entry_id, account_id, amount, currency)
             VALUES ($1, $3, 1, 'ARS'), ($1, $4, -1, 'ARS'), ($2, $3, 1, 'ARS'), ($2, $4, -0.99, 'ARS')`,
            [ok, bad, left, right],
          );
        }),
      ).rejects.toThrow(new RegExp(`journal entry ${bad} does not balance in ARS`));
      expect(await postingCount()).toBe(before + 4);
    });

    it('LedgerService.post refuses an unbalanced or one-line entry before writing', async () => {
      const account = await open();
      const before = await postingCount();
      for (const lines of [
        [
          { accountId: account.uuid, amount: new Money('1'), currency: 'ARS' },
          { accountId: ADJUSTMENTS, amount: new Money('-0.99'), currency: 'ARS' },
        ],
        [{ accountId: account.uuid, amount: new Money('0'), currency: 'ARS' }],
        [
          { accountId: account.uuid, amount: new Money('1'), currency: 'ARS' },
          { accountId: ADJUSTMENTS, amount: new Money('-1'), currency: 'USD' },
        ],
      ]) {
        await expect(
          t.dataSource.transaction((manager) =>
            ledger.post(manager, { appId: app.appId, kind: 'TEST', actor: 'test', lines }),
          ),
        ).rejects.toThrow(/does not balance|at least two|one currency/);
      }
      expect(await postingCount()).toBe(before);
    });

    it('a system account first created in a transaction that rolls back is created again by the next one', async () => {
      // FEE_REVENUE in USD is used nowhere else in this file: the first call creates it.
      const feeRevenue = systemAccountId('FEE_REVENUE', 'USD');
      await expect(
        t.dataSource.transaction(async (manager) => {
          expect(await ledger.systemAccount(manager, 'FEE_REVENUE', 'USD')).toBe(feeRevenue);
          throw new Error('rolled back on purpose');
        }),
      ).rejects.toThrow(/on purpose/);
      expect(
        await t.dataSource.query(`SELECT id FROM ledger_accounts WHERE id = $1`, [feeRevenue]),
      ).toStrictEqual([]);
      const [left] = await systemPair();
      await t.dataSource.query(`UPDATE ledger_accounts SET currency = 'USD' WHERE id = $1`, [left]);
      await t.dataSource.transaction(async (manager) => {
        const id = await ledger.systemAccount(manager, 'FEE_REVENUE', 'USD');
        await ledger.post(manager, {
          appId: null,
          kind: 'TEST',
          actor: 'test',
          lines: [
            { accountId: id, amount: new Money('2.5'), currency: 'USD' },
            { accountId: left, amount: new Money('-2.5'), currency: 'USD' },
          ],
        });
        // Taken back: fee revenue that no transfer earned would fail `ledger verify` (decision 0060).
        await ledger.post(manager, {
          appId: null,
          kind: 'TEST',
          actor: 'test',
          lines: [
            { accountId: id, amount: new Money('-2.5'), currency: 'USD' },
            { accountId: left, amount: new Money('2.5'), currency: 'USD' },
          ],
        });
      });
      expect(
        await t.dataSource.query(`SELECT kind, code, currency FROM ledger_accounts WHERE id = $1`, [
          feeRevenue,
        ]),
      ).toStrictEqual([{ kind: 'SYSTEM', code: 'FEE_REVENUE', currency: 'USD' }]);
    });
  });

  describe('the database functions of the money path agree with the TypeScript rules', () => {
    it('wallet_round rounds half-even to the minor units exactly like roundTo (Money)', async () => {
      // Ties in both directions, negative ties, values that are not ties, and zero-decimal currencies.
      const samples = [
        ['0.125', 2],
        ['0.135', 2],
        ['-0.125', 2],
        ['-0.135', 2],
        ['2.5', 0],
        ['3.5', 0],
        ['1.005', 2],
        ['1.0049999', 2],
        ['1.0050001', 2],
        ['99999999999.995', 2],
        ['0', 2],
        ['7', 0],
      ] as const;
      const random = Array.from({ length: 200 }, (_, n) => {
        const value = new Money((n * 2_654_435_761) % 1_000_000_007).div(10 ** ((n % 6) + 1)); // deterministic spread
        return [value.toFixed(), n % 3 === 0 ? 0 : 2] as const;
      });
      const cases = [...samples, ...random];
      const rows = (await t.dataSource.query(
        `SELECT wallet_round(v::numeric, u)::text AS rounded FROM unnest($1::text[], $2::int[]) AS x(v, u)`,
        [cases.map(([value]) => value), cases.map(([, units]) => units)],
      )) as { rounded: string }[];
      const expected = cases.map(([value, units]) =>
        new Money(value).toDecimalPlaces(units, Money.ROUND_HALF_EVEN).toFixed(),
      );
      expect(rows.map((row) => new Money(row.rounded).toFixed())).toStrictEqual(expected);
      expect(expected.slice(0, 6)).toStrictEqual(['0.12', '0.14', '-0.12', '-0.14', '2', '4']);
    });

    it('ledger_system_account derives the same id as systemAccountId and creates the row once', async () => {
      for (const code of SYSTEM_ACCOUNTS) {
        const [first] = (await t.dataSource.query(`SELECT ledger_system_account($1, 'CLP') AS id`, [
          code,
        ])) as {
          id: string;
        }[];
        const [again] = (await t.dataSource.query(`SELECT ledger_system_account($1, 'CLP') AS id`, [
          code,
        ])) as {
          id: string;
        }[];
        expect(first.id).toBe(systemAccountId(code, 'CLP'));
        expect(again.id).toBe(first.id);
        expect(
          await t.dataSource.query(`SELECT kind, code, currency FROM ledger_accounts WHERE id = $1`, [
            first.id,
          ]),
        ).toStrictEqual([{ kind: 'SYSTEM', code, currency: 'CLP' }]);
      }
    });
  });

  describe('ledger verify', () => {
    let dataDir: string;
    beforeAll(() => {
      dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-ledger-cli-'));
    });
    afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

    const verifyCli = async (): Promise<{ code: number | null; report: VerifyReport; stderr: string }> => {
      const result = await runCli({ databaseUrl: t.databaseUrl, dataDir }, ['ledger', 'verify']);
      const lines = result.stdout.split('\n').filter((line) => line !== '');
      expect(lines).toHaveLength(1);
      return { code: result.code, report: JSON.parse(lines[0]) as VerifyReport, stderr: result.stderr };
    };

    it('passes after the concurrent runs, in process and through the CLI; a tampered cached balance fails both', async () => {
      const inProcess = await ledger.verify();
      expect(inProcess).toStrictEqual({
        ok: true,
        incompleteEntries: [],
        entries: expect.any(Number),
        postings: expect.any(Number),
        walletAccounts: expect.any(Number),
        unbalancedEntries: [],
        balanceMismatches: [],
        totals: expect.any(Array),
        missingReferences: [],
        systemAccounts: expect.any(Array),
        transferEntries: { checked: 0, wrong: 0, first: [] },
        overReversed: { checked: 0, wrong: 0, first: [] },
      });
      // Every currency sums to zero (ARS from the adjustments, USD from the system-account test above).
      expect(inProcess.totals).toContainEqual({ currency: 'ARS', sum: '0.000000' });
      for (const total of inProcess.totals) expect(total.sum).toBe('0.000000');
      // No transfer here: the system accounts that transfers move (those created above, in CLP and USD) hold
      // nothing, and the transfers say nothing (ledger-verify-transfers covers them with transfers).
      expect(inProcess.systemAccounts).toContainEqual({
        currency: 'USD',
        code: 'FEE_REVENUE',
        balance: '0.000000',
        expected: '0',
      });
      for (const account of inProcess.systemAccounts)
        expect(new Money(account.balance).isZero() && new Money(account.expected).isZero()).toBe(true);
      expect(inProcess.entries).toBeGreaterThan(100);
      expect(inProcess.postings).toBeGreaterThanOrEqual(inProcess.entries * 2);

      const passing = await verifyCli();
      expect(passing.code).toBe(0);
      expect(passing.report).toStrictEqual(inProcess);

      // Tamper with one cached balance directly (the projection, not the postings).
      const account = await open();
      await putBalance(account.uuid, { balance: 12.34 }).expect(200);
      await t.dataSource.query(`UPDATE ledger_accounts SET balance = 99.99 WHERE id = $1`, [account.uuid]);
      try {
        const tampered = await ledger.verify();
        expect(tampered.ok).toBe(false);
        expect(tampered.balanceMismatches).toStrictEqual([
          { accountId: account.uuid, cached: '99.990000', postings: '12.340000' },
        ]);
        expect(tampered.unbalancedEntries).toStrictEqual([]);

        const failing = await verifyCli();
        expect(failing.code).toBe(1);
        expect(failing.report).toStrictEqual(tampered);
        expect(failing.stderr).toMatch(/does not verify/);
      } finally {
        await t.dataSource.query(`UPDATE ledger_accounts SET balance = 12.34 WHERE id = $1`, [account.uuid]);
      }
      expect((await ledger.verify()).ok).toBe(true);
    });

    it('reports rows that name nothing through an unenforced key, in process and through the CLI', async () => {
      const [ghostApp, ghostAccount] = [randomUUID(), randomUUID()];
      const [event] = (await t.dataSource.query(
        `INSERT INTO webhook_events (id, app_id, event, subject, payload, status)
         VALUES (uuidv7(), $1, 'transfer_update', 'x', '{}', 'delivered') RETURNING id::text AS id`,
        [ghostApp],
      )) as { id: string }[];
      await t.dataSource.query(
        `INSERT INTO operated_amounts (account_id, period, deposit, withdraw) VALUES ($1, 'M2026-01', 1, 0), ($1, 'M2026-02', 2, 0)`,
        [ghostAccount],
      );
      try {
        const broken = await ledger.verify();
        expect(broken.ok).toBe(false);
        expect(broken.missingReferences).toStrictEqual([
          { constraint: 'FK_operated_amounts_account', missing: ghostAccount, rows: 2 },
          { constraint: 'FK_webhook_events_app', missing: ghostApp, rows: 1 },
        ]);
        expect(broken.balanceMismatches).toStrictEqual([]);

        const failing = await verifyCli();
        expect(failing.code).toBe(1);
        expect(failing.report).toStrictEqual(broken);
      } finally {
        await t.dataSource.query(`DELETE FROM webhook_events WHERE id = $1`, [event.id]);
        await t.dataSource.query(`DELETE FROM operated_amounts WHERE account_id = $1`, [ghostAccount]);
      }
      expect((await ledger.verify()).ok).toBe(true);
    });

    it('reads every unenforced key from the catalog, one of several columns too (a null in it names nothing)', async () => {
      await t.dataSource.query(`CREATE TABLE verify_parent (a int, b text, PRIMARY KEY (a, b))`);
      await t.dataSource.query(
        `CREATE TABLE verify_child (id int, a int, b text,
           CONSTRAINT "FK_verify_child_parent" FOREIGN KEY (a, b) REFERENCES verify_parent (a, b) NOT ENFORCED)`,
      );
      try {
        await t.dataSource.query(`INSERT INTO verify_parent VALUES (1, 'x')`);
        await t.dataSource.query(
          `INSERT INTO verify_child VALUES (1, 1, 'x'), (2, 2, 'y'), (3, 2, 'y'), (4, NULL, 'z'), (5, 1, 'z')`,
        );
        const report = await ledger.verify();
        expect(report.ok).toBe(false);
        expect(report.missingReferences).toStrictEqual([
          { constraint: 'FK_verify_child_parent', missing: '(1,z)', rows: 1 },
          { constraint: 'FK_verify_child_parent', missing: '(2,y)', rows: 2 },
        ]);
      } finally {
        await t.dataSource.query(`DROP TABLE verify_child, verify_parent`);
      }
      expect((await ledger.verify()).ok).toBe(true);
    });
  });
});
