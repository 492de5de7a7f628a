import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { LedgerService } from '../src/modules/wallet/ledger/ledger.service.js';
import { accessToken, registerClient } from './support/auth.js';
import { bearer } from './support/identity.js';
import { runCli } from './support/processes.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { createOwner, holdAccountClosing, openAccount, setBalance, UUID_V7 } from './support/wallet.js';

const payer = (
  JSON.parse(readFileSync('config/counterparty-directory.json', 'utf8')) as {
    accounts: { number: string; titulares: string; cuit: string }[];
  }
).accounts[0];

describe('cli transfers inbound: money arriving from the rail into a CVU', () => {
  let t: TestApp;
  let dataDir: string;
  let token: string;
  let clientAppId: string;
  let account: { uuid: string; cvu: string };

  const cli = (args: string[]) => runCli({ databaseUrl: t.databaseUrl, dataDir }, args);

  /** `transfers inbound` of `amount` into `cvu` from the directory's first account. */
  const inbound = (cvu: string, amount: string, extra: string[] = []) =>
    cli([
      'transfers',
      'inbound',
      '--cvu',
      cvu,
      '--amount',
      amount,
      '--from',
      payer.number,
      '--name',
      payer.titulares,
      '--cuit',
      payer.cuit,
      ...extra,
    ]);

  beforeAll(async () => {
    t = await startTestApp();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-inbound-'));
    const client = await registerClient(t.app);
    clientAppId = client.appId;
    token = await accessToken(t.http, client);
    account = await openAccount(t.http, token, client.appId, await createOwner(t.http, token));
  });
  afterAll(async () => {
    await t.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('credits the account with an ACREDITADO DEPOSIT and announces it', async () => {
    const result = await inbound(account.cvu, '250.75', ['--concept', 'HON']);
    expect(result.code).toBe(0);
    const answer = JSON.parse(result.stdout) as { transferId: string; accountId: string; status: string };
    expect(answer).toStrictEqual({
      transferId: expect.any(String),
      accountId: account.uuid,
      status: 'ACREDITADO',
    });
    const balance = await request(t.http)
      .get(`/v1/wallet/accounts/${account.uuid}/balance`)
      .set('Authorization', bearer(token));
    expect(balance.body.balance).toBe(250.75);
    const list = await request(t.http)
      .get(`/v1/wallet/accounts/${account.uuid}/transactions`)
      .set('Authorization', bearer(token));
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).toMatchObject({
      uuid: answer.transferId,
      type: 'DEPOSIT',
      status: 'ACREDITADO',
      amount: 250.75,
      concept: 'HON',
      counterParty: { type: 'EXTERNAL', identifier: payer.number, name: payer.titulares },
    });
    const [event] = (await t.dataSource.query(
      `SELECT id::text AS id, event, payload->'data' AS data FROM webhook_events WHERE subject = $1`,
      [answer.transferId],
    )) as { id: string; event: string; data: unknown }[];
    expect(event).toStrictEqual({
      id: expect.stringMatching(UUID_V7),
      event: 'transfer_update',
      data: {
        uuid: answer.transferId,
        movementType: 'DEPOSIT',
        backStatus: 'PENDING',
        newStatus: 'ACCEPTED',
      },
    });
    // The deposit, its journal entry and its event have time-ordered ids (decision 0050).
    expect(answer.transferId).toMatch(UUID_V7);
    const entries = (await t.dataSource.query(
      `SELECT id::text AS id FROM journal_entries WHERE reference = $1 AND kind = 'INBOUND_TRANSFER'`,
      [answer.transferId],
    )) as { id: string }[];
    expect(entries).toStrictEqual([{ id: expect.stringMatching(UUID_V7) }]);
    expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
  });

  it('credits once per rail reference: the same message again answers the first credit, run at once or later', async () => {
    const target = await openAccount(t.http, token, clientAppId, await createOwner(t.http, token));
    const reference = ['--reference', `COELSA-${Date.now()}`];
    // Twice at once (a rail that delivered its message twice), then once more.
    const [first, second] = await Promise.all([
      inbound(target.cvu, '40', reference),
      inbound(target.cvu, '40', reference),
    ]);
    const third = await inbound(target.cvu, '40', reference);
    for (const result of [first, second, third]) expect(result.code).toBe(0);
    const answers = [first, second, third].map(
      (result) => JSON.parse(result.stdout) as { transferId: string },
    );
    expect(new Set(answers.map((answer) => answer.transferId)).size).toBe(1);
    const balance = await request(t.http)
      .get(`/v1/wallet/accounts/${target.uuid}/balance`)
      .set('Authorization', bearer(token));
    expect(balance.body.balance).toBe(40);
    expect(
      await t.dataSource.query(`SELECT count(*)::int AS n FROM transfers WHERE account_id = $1`, [
        target.uuid,
      ]),
    ).toStrictEqual([{ n: 1 }]);

    // The same reference for another amount is refused, and credits nothing; a new reference credits.
    const other = await inbound(target.cvu, '41', reference);
    expect({ code: other.code, stdout: other.stdout }).toStrictEqual({ code: 1, stdout: '' });
    expect(other.stderr).toMatch(/reference: this reference was used for another credit/);
    expect((await inbound(target.cvu, '41', ['--reference', `${reference[1]}-b`])).code).toBe(0);
    const after = await request(t.http)
      .get(`/v1/wallet/accounts/${target.uuid}/balance`)
      .set('Authorization', bearer(token));
    expect(after.body.balance).toBe(81);

    // The rail sends the first message again after the account was emptied and closed: the credit it made is the
    // answer (not "no account"); a new reference for the closed account is refused.
    await setBalance(t.http, token, target.uuid, 0);
    const closed = await request(t.http)
      .delete(`/v1/wallet/accounts/${target.uuid}`)
      .set('Authorization', bearer(token));
    expect(closed.status).toBe(200);
    const late = await inbound(target.cvu, '40', reference);
    expect(late.code).toBe(0);
    expect((JSON.parse(late.stdout) as { transferId: string }).transferId).toBe(answers[0].transferId);
    const refusedNew = await inbound(target.cvu, '40', ['--reference', `${reference[1]}-c`]);
    expect({ code: refusedNew.code, stdout: refusedNew.stdout }).toStrictEqual({ code: 1, stdout: '' });
    expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
  }, 180_000);

  it('money that arrives while its account is being closed is refused, not credited to the closed account', async () => {
    const closingAccount = await openAccount(t.http, token, clientAppId, await createOwner(t.http, token));
    const closing = await holdAccountClosing(t.dataSource, closingAccount.uuid);
    try {
      const arriving = inbound(closingAccount.cvu, '10');
      await closing.untilWaiting(); // for the account row's lock
      await closing.commit();
      const result = await arriving;
      expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 1, stdout: '' });
      expect(result.stderr).toContain(`Account not found: ${closingAccount.uuid}`);
    } finally {
      await closing.release();
    }
    const rows = (await t.dataSource.query(
      `SELECT (SELECT balance = 0 FROM ledger_accounts WHERE id = $1) AS empty,
              (SELECT count(*)::int FROM transfers WHERE account_id = $1) AS transfers`,
      [closingAccount.uuid],
    )) as { empty: boolean; transfers: number }[];
    expect(rows).toEqual([{ empty: true, transfers: 0 }]);
  });

  it('refuses bad input with a message on stderr and changes nothing', async () => {
    const before = await t.dataSource.query(`SELECT count(*)::int AS n FROM transfers`);
    /** A valid request's options with some replaced. */
    const argsWith = (changes: Record<string, string>) =>
      Object.entries({
        '--cvu': account.cvu,
        '--amount': '10',
        '--from': payer.number,
        '--name': 'x',
        '--cuit': payer.cuit,
        ...changes,
      }).flat();
    const cases = [
      argsWith({ '--cvu': '0000031000000000000099' }),
      argsWith({ '--amount': '10.123' }),
      argsWith({ '--from': '123' }),
      argsWith({ '--cuit': '20123456780' }),
      argsWith({ '--concept': 'NOPE' }),
      // More digits than a number keeps: it was credited as 100.
      argsWith({ '--amount': '100.0000000000000001' }),
      // A name longer than the API takes for a counterparty (200): it was written whole.
      argsWith({ '--name': 'n'.repeat(201) }),
      [...argsWith({}), '--reference', 'with space'],
    ];
    for (const args of cases) {
      const result = await cli(['transfers', 'inbound', ...args]);
      expect({ args, code: result.code, stdout: result.stdout }).toStrictEqual({ args, code: 1, stdout: '' });
      expect(result.stderr).toMatch(/^error: /m);
    }
    expect(await t.dataSource.query(`SELECT count(*)::int AS n FROM transfers`)).toStrictEqual(before);
  }, 180_000);
});
