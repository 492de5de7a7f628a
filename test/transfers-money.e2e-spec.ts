import request from 'supertest';
import { APP_CONFIG, type AppConfig } from '../src/config/app-config.js';
import { canMove, type TransferStatus } from '../src/modules/transfers/transfer-status.js';
import { LedgerService } from '../src/modules/wallet/ledger/ledger.service.js';
import { accessToken, registerClient, type TestClient } from './support/auth.js';
import { holdTransaction } from './support/database.js';
import { bearer, expectValidation, newCuit } from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollValue } from './support/poll.js';
import {
  balanceOf,
  counterParty,
  DIRECTORY,
  ISO,
  moneyRowCounts,
  operadoOf,
  postTransfer,
  setFees,
  setLimits,
  TRANSACTION_INFO_KEYS,
  transferBody,
  transferEvents,
  transferStatus,
  UNLISTED_CBU,
  UNLISTED_CVU,
} from './support/transfers.js';
import { createOwner, limitsOf, openAccount, setBalance, UUID, type AccountInfo } from './support/wallet.js';

/** Money paths of POST /v1/wallet/transactions with the worker and the clearing simulator running. */
describe('transfers: money safety (real database, worker, clearing simulator)', () => {
  let t: TestApp;
  let client: TestClient;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({
      runWorker: true,
      env: { CLEARING_SIM_DELAY_MS: '100', TRANSFER_TAX_RATE: '0.006' },
    });
    client = await registerClient(t.app, 'transfers-money');
    token = await accessToken(t.http, client);
  });
  afterAll(() => t.close());

  const open = async (balance = 0): Promise<AccountInfo & { ownerId: string }> => {
    const ownerId = await createOwner(t.http, token);
    const account = await openAccount(t.http, token, client.appId, ownerId);
    if (balance > 0) await setBalance(t.http, token, account.uuid, balance);
    return { ...account, ownerId };
  };
  const balance = (uuid: string) => balanceOf(t.http, token, uuid);
  const send = (body: unknown, key?: string) => postTransfer(t.http, token, body, key);
  const cents = (value: number) => Math.round(value * 100);
  const raiseLimits = (uuid: string) =>
    setLimits(t.http, token, uuid, {
      monthlyWithdrawLimit: 100_000,
      monthlyDepositLimit: 100_000,
      annualWithdrawLimit: 100_000,
      annualDepositLimit: 100_000,
    });

  describe('internal transfer', () => {
    it('settles at once: CreateTransactionResponse, both balances, the DEPOSIT record, operado and the event', async () => {
      const sender = await open(1000);
      const receiver = await open();
      await setFees(t.http, token, sender.uuid, 'FIXED', 2.5);
      const cValue = newCuit('20');
      const response = await send(
        transferBody(sender.uuid, receiver.cvu, 100, {
          counterParty: counterParty(receiver.cvu, cValue, 'Pedro Receptor'),
          summary: 'alquiler',
        }),
      );
      expect(response.status).toBe(201);
      // 0.6 = 100 × TRANSFER_TAX_RATE 0.006
      expect(response.body).toStrictEqual({
        uuid: expect.stringMatching(UUID),
        clearingId: null,
        type: 'WITHDRAW',
        status: 'ACREDITADO',
        account: {
          uuid: expect.stringMatching(UUID),
          name: 'María González',
          cuil: expect.stringMatching(/^\d{11}$/),
          type: 'USER',
          cvu: sender.cvu,
        },
        counterParty: {
          uuid: expect.stringMatching(UUID),
          name: 'Pedro Receptor',
          cuil: cValue,
          type: 'INTERNAL',
          personType: 'Fisica',
          identifierType: 'CVU',
          identifier: receiver.cvu,
        },
        amount: { value: 100, currency: 'ARS' },
        currency: 'ARS',
        movementType: 'WITHDRAW',
        concept: 'VAR',
        summary: 'alquiler',
        description: null,
        taxes: 0.6,
        fees: 2.5,
        created: expect.stringMatching(ISO),
      });
      expect(response.body).not.toHaveProperty('createdAt');
      expect(await balance(sender.uuid)).toBe(896.9); // 1000 − 100 − 2.5 fee − 0.6 tax
      expect(await balance(receiver.uuid)).toBe(99.4); // 100 − 0.6 tax on the credit (debits and credits)

      const list = await request(t.http)
        .get(`/v1/wallet/accounts/${receiver.uuid}/transactions`)
        .set('Authorization', bearer(token));
      expect(list.status).toBe(200);
      const deposits = (list.body as Record<string, unknown>[]).filter((item) => item.type === 'DEPOSIT');
      expect(deposits).toHaveLength(1);
      const deposit = deposits[0];
      expect(Object.keys(deposit).sort()).toEqual(TRANSACTION_INFO_KEYS);
      expect(deposit).toMatchObject({
        status: 'ACREDITADO',
        amount: 100,
        taxes: 0.6,
        fees: 0,
        currency: 'ARS',
        counterParty: { type: 'INTERNAL', identifierType: 'CVU', identifier: sender.cvu },
        account: { cvu: receiver.cvu },
      });
      expect(deposit.uuid).not.toBe(response.body.uuid);

      expect(await operadoOf(t.http, token, sender.uuid)).toMatchObject({
        monthWithdraw: 100,
        annualWithdraw: 100,
      });
      expect(await operadoOf(t.http, token, receiver.uuid)).toMatchObject({
        monthDeposit: 100,
        annualDeposit: 100,
      });
      expect(await transferEvents(t.dataSource, deposit.uuid as string)).toStrictEqual([
        { uuid: deposit.uuid, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
      ]);
    });

    it('takes a PERCENTAGE fee from the sender and the tax on both the debit and the credit', async () => {
      const sender = await open(1000);
      const receiver = await open();
      await setFees(t.http, token, sender.uuid, 'PERCENTAGE', 1.5);
      const response = await send(transferBody(sender.uuid, receiver.cvu, 200));
      expect(response.status).toBe(201);
      expect(response.body).toMatchObject({ status: 'ACREDITADO', fees: 3, taxes: 1.2 });
      expect(await balance(sender.uuid)).toBe(795.8); // 1000 − 200 − 3 − 1.2
      expect(await balance(receiver.uuid)).toBe(198.8); // 200 − 1.2 tax on the credit
    });
  });

  it('200 concurrent withdrawals from an account funded for 100: money conserved, never negative', async () => {
    const sender = await open(503); // each transfer of 5 costs 5.03 (tax 0.03): exactly 100 fit
    const receiver = await open();
    await raiseLimits(sender.uuid);
    await raiseLimits(receiver.uuid);
    const body = transferBody(sender.uuid, receiver.cvu, 5);
    const responses = await Promise.all(Array.from({ length: 200 }, () => send(body)));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status !== 201 && status !== 400)).toEqual([]);
    const accepted = statuses.filter((status) => status === 201).length;
    for (const refused of responses.filter((response) => response.status === 400)) {
      const items = expectValidation(refused);
      expect(items).toStrictEqual([
        { path: 'amount', type: 'invalid', message: expect.stringMatching(/insufficient funds/) },
      ]);
    }
    const left = await balance(sender.uuid);
    expect(left).toBeGreaterThanOrEqual(0);
    expect(cents(503) - cents(left)).toBe(accepted * cents(5.03));
    expect(await balance(receiver.uuid)).toBe(Math.round(accepted * 4.97 * 100) / 100); // 5 − 0.03 tax on each credit
    expect(accepted).toBe(100);
    const [rows] = (await t.dataSource.query(
      `SELECT count(*)::int AS n FROM transfers WHERE account_id = $1`,
      [sender.uuid],
    )) as { n: number }[];
    expect(rows.n).toBe(accepted);
    expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
  });

  it('group commit: concurrent transfers share transactions, and a refused one in a group writes nothing', async () => {
    // 30 senders funded for one transfer of 6 (6.04 with the tax), each sending two at once: 60 requests to one
    // receiver, so one database call at a time whatever TRANSFER_BATCH_CONCURRENCY (requests sharing an account
    // never go to concurrent calls), some of them refused.
    const receiver = await open();
    await raiseLimits(receiver.uuid);
    const senders = await Promise.all(Array.from({ length: 30 }, () => open(10)));
    const before = await moneyRowCounts(t.dataSource);
    // The receiver's ledger row held from another connection: the first calls wait on it, the requests
    // arriving meanwhile queue in the batcher, and the next free calls take them in groups.
    const holder = t.dataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    await holder.query(`SELECT 1 FROM ledger_accounts WHERE id = $1 FOR UPDATE`, [receiver.uuid]);
    const sent = Promise.all(
      senders.flatMap((sender) => [1, 2].map(() => send(transferBody(sender.uuid, receiver.cvu, 6)))),
    );
    const waiting = await pollValue(
      async () =>
        (
          (await t.dataSource.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%wallet_create_transfer%'`,
          )) as { n: number }[]
        )[0].n,
      (n) => n >= 1,
    );
    expect(waiting).toBe(1); // one call: the others share its receiver
    // Let the other requests arrive: fewer of them queued would only mean more, smaller groups.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await holder.commitTransaction();
    await holder.release();
    const responses = await sent;
    const accepted = responses.filter((response) => response.status === 201);
    const refused = responses.filter((response) => response.status !== 201);
    expect(accepted).toHaveLength(30);
    for (const response of refused) {
      expect(expectValidation(response)).toStrictEqual([
        { path: 'amount', type: 'invalid', message: expect.stringMatching(/insufficient funds/) },
      ]);
    }
    for (const sender of senders) expect(await balance(sender.uuid)).toBe(3.96);
    expect(await balance(receiver.uuid)).toBe(178.8); // 30 × (6 − 0.04 tax on the credit)
    // Nothing of the 30 refused: two transfers, two events, one entry per accepted one.
    const after = await moneyRowCounts(t.dataSource);
    expect({
      transfers: after.transfers - before.transfers,
      journal_entries: after.journal_entries - before.journal_entries,
      events: after.events - before.events,
    }).toStrictEqual({ transfers: 60, journal_entries: 30, events: 30 });
    // now() is the transaction's start: entries written by one call share it, to the microsecond.
    const [grouping] = (await t.dataSource.query(
      `SELECT count(*)::int AS entries, count(DISTINCT created_at)::int AS transactions
         FROM journal_entries WHERE kind = 'INTERNAL_TRANSFER' AND reference = ANY($1)`,
      [accepted.map((response) => (response.body as { uuid: string }).uuid)],
    )) as { entries: number; transactions: number }[];
    expect(grouping.entries).toBe(30);
    expect(grouping.transactions).toBeLessThan(30);
    expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
  });

  describe('refusals write nothing', () => {
    it('insufficient funds: 400 at amount naming the cause', async () => {
      const sender = await open(50);
      const receiver = await open();
      for (const identifier of [receiver.cvu, DIRECTORY.nacion.number]) {
        const before = await moneyRowCounts(t.dataSource);
        const response = await send(transferBody(sender.uuid, identifier, 50)); // 50 + tax 0.3 > 50
        expect(expectValidation(response)).toStrictEqual([
          { path: 'amount', type: 'invalid', message: expect.stringMatching(/insufficient funds/) },
        ]);
        expect(await moneyRowCounts(t.dataSource)).toStrictEqual(before);
      }
      expect(await balance(sender.uuid)).toBe(50);
    });

    it.each([
      ['monthly', { monthlyWithdrawLimit: 30, annualWithdrawLimit: 10_000 }, /monthly withdraw limit/],
      ['annual', { monthlyWithdrawLimit: 10_000, annualWithdrawLimit: 30 }, /annual withdraw limit/],
    ])('exceeded %s withdraw limit: 400 at amount naming it', async (_name, limits, message) => {
      const sender = await open(1000);
      const receiver = await open();
      await setLimits(t.http, token, sender.uuid, {
        monthlyDepositLimit: 10_000,
        annualDepositLimit: 10_000,
        ...limits,
      });
      expect((await send(transferBody(sender.uuid, receiver.cvu, 20))).status).toBe(201);
      for (const identifier of [receiver.cvu, DIRECTORY.nacion.number]) {
        const before = await moneyRowCounts(t.dataSource);
        const response = await send(transferBody(sender.uuid, identifier, 20)); // 20 operated + 20 > 30
        expect(expectValidation(response)).toStrictEqual([
          { path: 'amount', type: 'invalid', message: expect.stringMatching(message) },
        ]);
        expect(await moneyRowCounts(t.dataSource)).toStrictEqual(before);
      }
    });

    it.each([
      ['monthly', { monthlyDepositLimit: 30, annualDepositLimit: 10_000 }, /monthly deposit limit/],
      ['annual', { monthlyDepositLimit: 10_000, annualDepositLimit: 30 }, /annual deposit limit/],
    ])(
      'exceeded %s deposit limit of the receiver / the account: 400 at amount',
      async (_n, limits, message) => {
        const sender = await open(1000);
        const receiver = await open();
        await setLimits(t.http, token, receiver.uuid, {
          monthlyWithdrawLimit: 10_000,
          annualWithdrawLimit: 10_000,
          ...limits,
        });
        expect((await send(transferBody(sender.uuid, receiver.cvu, 20))).status).toBe(201);
        const before = await moneyRowCounts(t.dataSource);
        const internal = await send(transferBody(sender.uuid, receiver.cvu, 20));
        expect(expectValidation(internal)).toStrictEqual([
          { path: 'amount', type: 'invalid', message: expect.stringMatching(message) },
        ]);
        // An external DEPOSIT into the limited account counts against the same limit.
        const external = await send(
          transferBody(receiver.uuid, DIRECTORY.nacion.number, 20, {
            movementType: 'DEPOSIT',
            counterParty: counterParty(DIRECTORY.nacion.number, DIRECTORY.nacion.cuit),
          }),
        );
        expect(expectValidation(external)).toStrictEqual([
          { path: 'amount', type: 'invalid', message: expect.stringMatching(message) },
        ]);
        expect(await moneyRowCounts(t.dataSource)).toStrictEqual(before);
        expect(await balance(receiver.uuid)).toBe(19.88); // 20 − 0.12 tax on the credit
      },
    );
  });

  describe('idempotency', () => {
    it('same key and body: the same answer, one transfer; another body: 400; another app: independent', async () => {
      const sender = await open(1000);
      const receiver = await open();
      const body = transferBody(sender.uuid, receiver.cvu, 10);
      const key = `key-${Date.now()}`;
      const first = await send(body, key);
      expect(first.status).toBe(201);
      const second = await send(body, key);
      expect(second.status).toBe(201);
      expect(second.body).toStrictEqual(first.body);
      expect(await balance(sender.uuid)).toBe(989.94); // once: 10 + 0.06 tax

      const other = await send({ ...body, amount: 11 }, key);
      expect(expectValidation(other).map((item) => item.path)).toEqual(['Idempotency-Key']);

      const clientB = await registerClient(t.app, 'transfers-money-b');
      const tokenB = await accessToken(t.http, clientB);
      const ownerB = await createOwner(t.http, tokenB);
      const accountB = await openAccount(t.http, tokenB, clientB.appId, ownerB);
      await setBalance(t.http, tokenB, accountB.uuid, 100);
      const inB = await postTransfer(t.http, tokenB, transferBody(accountB.uuid, receiver.cvu, 10), key);
      expect(inB.status).toBe(201);
      expect(inB.body.uuid).not.toBe(first.body.uuid);
      expect(await balance(receiver.uuid)).toBe(19.88); // 20 − 0.12 tax on the credit
      expect(await balance(sender.uuid)).toBe(989.94);
    });

    it('20 identical requests racing with one key: 20 identical answers, one transfer, one journal entry', async () => {
      const sender = await open(1000);
      const receiver = await open();
      const body = transferBody(sender.uuid, DIRECTORY.nacion.number, 10, {
        counterParty: counterParty(DIRECTORY.nacion.number, DIRECTORY.nacion.cuit),
      });
      const key = `race-${Date.now()}`;
      const responses = await Promise.all(Array.from({ length: 20 }, () => send(body, key)));
      expect(responses.map((response) => response.status)).toEqual(Array(20).fill(201));
      for (const response of responses) expect(response.body).toStrictEqual(responses[0].body);
      const [row] = (await t.dataSource.query(
        `SELECT (SELECT count(*) FROM transfers WHERE account_id = $1)::int AS transfers,
                (SELECT count(DISTINCT entry_id) FROM postings WHERE account_id = $1)::int AS entries`,
        [sender.uuid],
      )) as { transfers: number; entries: number }[];
      // One balance adjustment plus the one hold.
      expect(row).toStrictEqual({ transfers: 1, entries: 2 });
      expect(await balance(sender.uuid)).toBe(989.94);
      expect(receiver.uuid).toMatch(UUID);
    });
  });

  describe('external WITHDRAW through the clearing simulator', () => {
    it('holds at once, then ACREDITADO with a clearingId; the hold is captured', async () => {
      const sender = await open(1000);
      await setFees(t.http, token, sender.uuid, 'FIXED', 1);
      const response = await send(
        transferBody(sender.uuid, DIRECTORY.nacion.number, 100, {
          counterParty: counterParty(DIRECTORY.nacion.number, DIRECTORY.nacion.cuit),
        }),
      );
      expect(response.status).toBe(201);
      expect(response.body).toMatchObject({
        status: 'INICIADO',
        clearingId: null,
        fees: 1,
        taxes: 0.6,
        counterParty: { type: 'EXTERNAL', identifierType: 'CBU', personType: 'Fisica' },
      });
      expect(await balance(sender.uuid)).toBe(898.4); // held: 100 + 1 + 0.6
      const id = response.body.uuid as string;
      const final = await pollValue(
        async () =>
          (await request(t.http).get(`/v1/wallet/transactions/${id}`).set('Authorization', bearer(token)))
            .body as Record<string, unknown>,
        (view) => view.status === 'ACREDITADO',
      );
      expect(final.status).toBe('ACREDITADO');
      expect(final.clearingId).toEqual(expect.any(String));
      expect(await balance(sender.uuid)).toBe(898.4);
      expect(await operadoOf(t.http, token, sender.uuid)).toMatchObject({ monthWithdraw: 100 });
      expect(await transferEvents(t.dataSource, id)).toStrictEqual([
        { uuid: id, movementType: 'WITHDRAW', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
      ]);
    });

    it.each([
      [DIRECTORY.errorDatos.number, DIRECTORY.errorDatos.cuit, 'ERROR_DATOS'],
      [DIRECTORY.sinGarantia.number, DIRECTORY.sinGarantia.cuit, 'SIN_GARANTIA'],
      [DIRECTORY.errorAcreditacion.number, DIRECTORY.errorAcreditacion.cuit, 'ERROR_ACREDITACION'],
    ])(
      'to the test account %s (cuit %s): ends %s and the hold is released',
      async (identifier, cuit, expected) => {
        const sender = await open(1000);
        const response = await send(
          transferBody(sender.uuid, identifier, 100, { counterParty: counterParty(identifier, cuit) }),
        );
        expect(response.status).toBe(201);
        expect(response.body.status).toBe('INICIADO');
        expect(await balance(sender.uuid)).toBe(899.4);
        const id = response.body.uuid as string;
        expect(
          await pollValue(
            () => transferStatus(t.dataSource, id),
            (s) => s === expected,
          ),
        ).toBe(expected);
        expect(await balance(sender.uuid)).toBe(1000);
        expect(await operadoOf(t.http, token, sender.uuid)).toMatchObject({ monthWithdraw: 0 });
        expect(await transferEvents(t.dataSource, id)).toStrictEqual([
          { uuid: id, movementType: 'WITHDRAW', backStatus: 'PENDING', newStatus: 'REJECTED' },
        ]);
        // Taxes and fees are "totals applied": the 0.6 tax held at creation was given back with the amount.
        const seen = await request(t.http)
          .get(`/v1/wallet/transactions/${id}`)
          .set('Authorization', bearer(token));
        expect(seen.body).toMatchObject({ status: expected, amount: 100, taxes: 0, fees: 0 });
        const listed = await request(t.http)
          .get(`/v1/wallet/accounts/${sender.uuid}/transactions`)
          .set('Authorization', bearer(token));
        expect((listed.body as { uuid: string }[]).find((row) => row.uuid === id)).toMatchObject({
          taxes: 0,
          fees: 0,
        });
      },
    );
  });

  describe('any CBU/CVU with valid check digits settles (operator contract)', () => {
    const history = async (id: string) =>
      (await t.dataSource.query(
        `SELECT to_status, (extract(epoch FROM at) * 1000)::float8 AS at_ms
           FROM transfer_status_path WHERE transfer_id = $1 ORDER BY step`,
        [id],
      )) as { to_status: string; at_ms: number }[];

    it.each([
      ['WITHDRAW', 'a CBU', UNLISTED_CBU, 'CBU'],
      ['WITHDRAW', 'a CVU of another PSP', UNLISTED_CVU, 'CVU'],
      ['DEPOSIT', 'a CBU', UNLISTED_CBU, 'CBU'],
    ] as const)(
      '%s to %s the directory does not list: ACREDITADO after CLEARING_SIM_DELAY_MS, one transfer_update',
      async (movementType, _name, identifier, identifierType) => {
        const account = await open(1000);
        const response = await send(transferBody(account.uuid, identifier, 100, { movementType }));
        expect(response.status).toBe(201);
        expect(response.body).toMatchObject({
          status: 'INICIADO',
          movementType,
          counterParty: { type: 'EXTERNAL', identifierType, identifier },
        });
        const held = movementType === 'WITHDRAW' ? 899.4 : 1000; // 100 + 0.6 tax held; a DEPOSIT waits
        expect(await balance(account.uuid)).toBe(held);
        const id = response.body.uuid as string;
        expect(
          await pollValue(
            () => transferStatus(t.dataSource, id),
            (s) => s === 'ACREDITADO',
          ),
        ).toBe('ACREDITADO');
        expect(await balance(account.uuid)).toBe(movementType === 'WITHDRAW' ? 899.4 : 1099.4);
        expect(await operadoOf(t.http, token, account.uuid)).toMatchObject(
          movementType === 'WITHDRAW' ? { monthWithdraw: 100 } : { monthDeposit: 100 },
        );
        const steps = await history(id);
        expect(steps.map((step) => step.to_status)).toEqual([
          'COMMITING',
          'INICIADO',
          'EN_CURSO',
          'ACREDITADO',
        ]);
        const delayMs = t.app.get<AppConfig>(APP_CONFIG).clearingSimDelayMs;
        expect(steps[3].at_ms - steps[2].at_ms).toBeGreaterThanOrEqual(delayMs);
        // One announcement, of the final change; the INICIADO → EN_CURSO step (PENDING → PENDING) sends none.
        expect(await transferEvents(t.dataSource, id)).toStrictEqual([
          { uuid: id, movementType, backStatus: 'PENDING', newStatus: 'ACCEPTED' },
        ]);
      },
    );

    it("a CVU of this service's own PSP with no live account here (a deleted one): ERROR_DATOS, hold released", async () => {
      const sender = await open(1000);
      const gone = await open();
      await request(t.http)
        .delete(`/v1/wallet/accounts/${gone.uuid}`)
        .set('Authorization', bearer(token))
        .expect(200);
      const response = await send(transferBody(sender.uuid, gone.cvu, 100));
      expect(response.status).toBe(201);
      expect(response.body).toMatchObject({ status: 'INICIADO', counterParty: { type: 'EXTERNAL' } });
      const id = response.body.uuid as string;
      expect(
        await pollValue(
          () => transferStatus(t.dataSource, id),
          (s) => s === 'ERROR_DATOS',
        ),
      ).toBe('ERROR_DATOS');
      expect(await balance(sender.uuid)).toBe(1000);
      expect(await transferEvents(t.dataSource, id)).toStrictEqual([
        { uuid: id, movementType: 'WITHDRAW', backStatus: 'PENDING', newStatus: 'REJECTED' },
      ]);
    });
  });

  it('external DEPOSIT: nothing until ACREDITADO, then amount − fees − taxes', async () => {
    const account = await open(10);
    await setFees(t.http, token, account.uuid, 'FIXED', 2);
    const response = await send(
      transferBody(account.uuid, DIRECTORY.nacion.number, 100, {
        movementType: 'DEPOSIT',
        counterParty: counterParty(DIRECTORY.nacion.number, DIRECTORY.nacion.cuit),
      }),
    );
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ status: 'INICIADO', movementType: 'DEPOSIT', fees: 2, taxes: 0.6 });
    expect(await balance(account.uuid)).toBe(10);
    const id = response.body.uuid as string;
    expect(
      await pollValue(
        () => transferStatus(t.dataSource, id),
        (s) => s === 'ACREDITADO',
      ),
    ).toBe('ACREDITADO');
    expect(await balance(account.uuid)).toBe(107.4); // 10 + 100 − 2 − 0.6
    expect(await operadoOf(t.http, token, account.uuid)).toMatchObject({ monthDeposit: 100 });
    expect(await transferEvents(t.dataSource, id)).toStrictEqual([
      { uuid: id, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
    ]);
  });

  describe('account changes while a transfer that read the account waits to commit', () => {
    /**
     * A transfer of 10 from a new account of 100, whose group has read the account under its ledger lock and then
     * waits for its Idempotency-Key's twin (held open here); `change` is sent meanwhile. Whether the change
     * waited for the transfer (queued behind it), and both answers once the twin rolls back.
     */
    const changeWhileATransferWaits = async (
      change: (account: AccountInfo) => request.Test,
    ): Promise<{ waited: boolean; transfer: number; change: number; account: AccountInfo }> => {
      const account = await open(100);
      const receiver = await open();
      const key = `read-then-wait-${account.uuid}`;
      const twin = await holdTransaction(t.dataSource, [
        [
          `INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES ($1, $2, 'twin')`,
          [client.appId, key],
        ],
      ]);
      const answers: { transfer?: request.Response; change?: request.Response } = {};
      try {
        const sending = send(transferBody(account.uuid, receiver.cvu, 10), key).then((response) => {
          answers.transfer = response;
        });
        await twin.untilWaiting();
        const changing = change(account).then((response) => {
          answers.change = response;
        });
        const seen = await pollValue(
          async () => ({ answered: answers.change !== undefined, waiting: await twin.waiting() }),
          ({ answered, waiting }) => answered || waiting >= 2,
        );
        await twin.release();
        await Promise.all([sending, changing]);
        return {
          waited: !seen.answered && seen.waiting === 2,
          transfer: answers.transfer!.status,
          change: answers.change!.status,
          account,
        };
      } finally {
        await twin.release();
      }
    };
    const patch = (path: string, body: object) => (account: AccountInfo) =>
      request(t.http)
        .patch(`/v1/wallet/accounts/${account.uuid}${path}`)
        .set('Authorization', bearer(token))
        .send(body);
    /** The account's state and its WITHDRAWs, from the database. */
    const stateOf = async (account: AccountInfo) =>
      (
        (await t.dataSource.query(
          `SELECT w.status, w.owner_id, w.alias, w.fee_type, w.fee_amount::text AS fee,
                  w.monthly_withdraw_limit::text AS monthly_withdraw_limit,
                  (SELECT count(*)::int FROM transfers x WHERE x.account_id = w.id AND x.movement_type = 'WITHDRAW')
                    AS withdrawals
             FROM wallet_accounts w WHERE w.id = $1`,
          [account.uuid],
        )) as Record<string, unknown>[]
      )[0];

    it.each([
      ['a stop (status INACTIVE)', patch('', { status: 'INACTIVE' }), { status: 'INACTIVE' }],
      ['a lowered limit', patch('/limits', { ...limitsOf(5) }), { monthly_withdraw_limit: '5.000000' }],
      [
        'another fee',
        patch('/fees', { feeType: 'FIXED', amount: 7 }),
        { fee_type: 'FIXED', fee: '7.000000' },
      ],
    ])(
      '%s waits for the transfer, which commits first with the account as it read it',
      async (_, change, after) => {
        const result = await changeWhileATransferWaits(change);
        expect({ waited: result.waited, transfer: result.transfer, change: result.change }).toEqual({
          waited: true,
          transfer: 201,
          change: 200,
        });
        expect(await stateOf(result.account)).toMatchObject({ ...after, withdrawals: 1 });
      },
    );

    it('a new owner waits for the transfer too; a new alias does not (no transfer decides by it)', async () => {
      const newOwner = await createOwner(t.http, token);
      const moved = await changeWhileATransferWaits(patch('', { type: 'USER', entityId: newOwner }));
      expect({ waited: moved.waited, transfer: moved.transfer, change: moved.change }).toEqual({
        waited: true,
        transfer: 201,
        change: 200,
      });
      expect(await stateOf(moved.account)).toMatchObject({ owner_id: newOwner, withdrawals: 1 });
      const renamed = await changeWhileATransferWaits(patch('', { alias: 'read.then.wait' }));
      expect({ waited: renamed.waited, transfer: renamed.transfer, change: renamed.change }).toEqual({
        waited: false,
        transfer: 201,
        change: 200,
      });
      expect(await stateOf(renamed.account)).toMatchObject({ alias: 'read.then.wait', withdrawals: 1 });
    });
  });

  it('every status history is a legal path from COMMITING, and the ledger verifies', async () => {
    // No transfer of this file is left in flight.
    await pollValue(
      async () =>
        (
          (await t.dataSource.query(
            `SELECT count(*)::int AS n FROM transfers WHERE status IN ('COMMITING', 'INICIADO', 'EN_CURSO')`,
          )) as { n: number }[]
        )[0].n,
      (n) => n === 0,
    );
    const rows = (await t.dataSource.query(
      `SELECT t.id, t.status, array_agg(h.from_status ORDER BY h.step) AS froms, array_agg(h.to_status ORDER BY h.step) AS tos
         FROM transfers t JOIN transfer_status_path h ON h.transfer_id = t.id GROUP BY t.id, t.status`,
    )) as { id: string; status: TransferStatus; froms: (TransferStatus | null)[]; tos: TransferStatus[] }[];
    const [{ n: total }] = (await t.dataSource.query(`SELECT count(*)::int AS n FROM transfers`)) as {
      n: number;
    }[];
    expect(rows).toHaveLength(total);
    expect(total).toBeGreaterThan(100);
    for (const row of rows) {
      expect(row.froms[0]).toBeNull();
      expect(row.tos[0]).toBe('COMMITING');
      for (let i = 1; i < row.tos.length; i++) {
        expect(row.froms[i]).toBe(row.tos[i - 1]);
        expect(canMove(row.tos[i - 1], row.tos[i])).toBe(true);
      }
      expect(row.tos[row.tos.length - 1]).toBe(row.status);
    }
    const report = await t.app.get(LedgerService).verify();
    expect(report).toMatchObject({ ok: true, unbalancedEntries: [], balanceMismatches: [] });
  });
});
