import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type { EntityManager } from 'typeorm';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import { ClearingService } from '../src/modules/transfers/clearing/clearing.service.js';
import { ReversalsService } from '../src/modules/transfers/reversals.service.js';
import { TransfersService } from '../src/modules/transfers/transfers.service.js';
import {
  LedgerService,
  systemAccountId,
  type VerifyReport,
} from '../src/modules/wallet/ledger/ledger.service.js';
import { holdTransaction } from './support/database.js';
import { bearer } from './support/identity.js';
import { runCli } from './support/processes.js';
import type { TestApp } from './support/test-app.js';
import { postTransfer, setFees, transferBody, UNLISTED_CBU } from './support/transfers.js';
import { startWithTwoApplications } from './support/two-applications.js';
import { createOwner, openAccount, setBalance, type AccountInfo } from './support/wallet.js';

/** A payer of another institution, for the inbound credit (config/counterparty-directory.json's first account). */
const PAYER = { number: '0110599590000001234568', cuit: '27234567891', name: 'María Fernanda López' };

/**
 * `ledger verify` against the transfers (decision 0060): the system accounts hold what the transfers say, each
 * transfer has the entries its status calls for, none is reversed beyond its amount. A clean ledger with
 * transfers in every final state passes; each corruption, made by hand as a superuser, is reported, then taken
 * out again (the ledger is append-only: triggers are off for that, session_replication_role = replica).
 */
describe('ledger verify checks the system accounts and the entries against the transfers (real database)', () => {
  let t: TestApp;
  let ledger: LedgerService;
  let appA: string;
  let a: AccountInfo;
  let b: AccountInfo;
  /** Transfers by name, as the clean ledger has them. */
  const ids: Record<string, string> = {};
  const HOLDS = systemAccountId('HOLDS', 'ARS');
  const SETTLEMENT = systemAccountId('SETTLEMENT', 'ARS');
  const FEE_REVENUE = systemAccountId('FEE_REVENUE', 'ARS');
  const ADJUSTMENTS = systemAccountId('ADJUSTMENTS', 'ARS');

  /**
   * The system accounts with a formula as the clean ledger below leaves them: every one equal to what the transfers
   * say (no return to a closed account here: UNCLAIMED_RETURNS holds nothing, decision 0062).
   */
  const CLEAN = {
    HOLDS: '174.700000',
    SETTLEMENT: '-470.750000',
    FEE_REVENUE: '4.500000',
    TAX_PAYABLE: '9.510000',
    UNCLAIMED_RETURNS: '0',
  };
  const systemAccounts = (changed: Partial<Record<keyof typeof CLEAN, [string, string]>> = {}) =>
    (Object.keys(CLEAN) as (keyof typeof CLEAN)[]).map((code) => ({
      currency: 'ARS',
      code,
      balance: changed[code]?.[0] ?? CLEAN[code],
      expected: changed[code]?.[1] ?? CLEAN[code],
    }));
  const cleanTransferEntries = { checked: 15, wrong: 0, first: [] };
  /** The entries check of the clean ledger's 15 transfers, with one problem. */
  const oneWrongTransfer = (problem: Record<string, unknown>) => ({
    checked: 15,
    wrong: 1,
    first: [problem],
  });
  const cleanOverReversed = { checked: 3, wrong: 0, first: [] };

  /** A journal entry written as by hand, through ledger_post (a superuser's psql session). */
  const post = async (
    kind: string,
    reference: string | null,
    accounts: string[],
    amounts: string[],
  ): Promise<string> => {
    const [row] = (await t.dataSource.query(
      `SELECT ledger_post($1, $2, $3, NULL, 'test:by-hand', $4::uuid[], $5::numeric[], 'ARS')::text AS id`,
      [appA, kind, reference, accounts, amounts],
    )) as { id: string }[];
    return row.id;
  };
  /** Takes out what a corruption wrote: its entries (with the cached balances they moved) and transfer rows. */
  const undo = async (entries: string[], transfers: string[] = []) => {
    await t.dataSource.transaction(async (manager: EntityManager) => {
      await manager.query(`SET LOCAL session_replication_role = replica`);
      await manager.query(
        `UPDATE ledger_accounts a SET balance = a.balance - p.sum
           FROM (SELECT account_id, sum(amount) AS sum FROM postings WHERE entry_id = ANY ($1::uuid[])
                  GROUP BY account_id) p
          WHERE a.id = p.account_id AND a.kind = 'WALLET'`,
        [entries],
      );
      await manager.query(`DELETE FROM postings WHERE entry_id = ANY ($1::uuid[])`, [entries]);
      await manager.query(`DELETE FROM journal_entries WHERE id = ANY ($1::uuid[])`, [entries]);
      await manager.query(`DELETE FROM transfers WHERE id = ANY ($1::uuid[])`, [transfers]);
    });
  };
  /** A transfer row written by hand: a copy of `like` with `changes` (column = SQL value). */
  const copyTransfer = async (like: string, changes: Record<string, string>): Promise<string> => {
    const id = randomUUID();
    const columns = [
      'app_id',
      'account_id',
      'movement_type',
      'status',
      'route',
      'counterparty_name',
      'counterparty_tax_id',
      'counterparty_identifier_type',
      'counterparty_identifier',
      'amount',
      'currency',
      'fees',
      'taxes',
      'concept',
      'reversal_of',
    ];
    await t.dataSource.query(
      `INSERT INTO transfers (id, ${columns.join(', ')})
       SELECT $1, ${columns.map((column) => changes[column] ?? column).join(', ')} FROM transfers WHERE id = $2`,
      [id, like],
    );
    return id;
  };
  const expectClean = async () => {
    const report = await ledger.verify();
    expect(report).toMatchObject({
      ok: true,
      systemAccounts: systemAccounts(),
      transferEntries: cleanTransferEntries,
      overReversed: cleanOverReversed,
    });
    return report;
  };
  /** verify's report, through the built CLI: exit code and the JSON it printed. */
  const verifyCli = async (): Promise<{ code: number | null; report: VerifyReport }> => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ledger-verify-cli-'));
    try {
      const result = await runCli({ databaseUrl: t.databaseUrl, dataDir }, ['ledger', 'verify']);
      return { code: result.code, report: JSON.parse(result.stdout) as VerifyReport };
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  };

  beforeAll(async () => {
    const two = await startWithTwoApplications('verify', { env: { TRANSFER_TAX_RATE: '0.01' } });
    t = two.t;
    appA = two.appA.appId;
    ledger = t.app.get(LedgerService);
    a = await openAccount(t.http, two.tokenA, appA, await createOwner(t.http, two.tokenA));
    b = await openAccount(t.http, two.tokenB, two.appB.appId, await createOwner(t.http, two.tokenB));
    await setBalance(t.http, two.tokenA, a.uuid, 10_000);
    await setBalance(t.http, two.tokenB, b.uuid, 1_000);
    await setFees(t.http, two.tokenA, a.uuid, 'FIXED', 1.5);
    const send = async (name: string, body: object) => {
      const response = await postTransfer(t.http, two.tokenA, body);
      expect(response.status).toBe(201);
      ids[name] = (response.body as { uuid: string }).uuid;
    };
    const clearing = t.app.get(ClearingService);

    // Internal: 100 from A to B (fee 1.5, tax 1 on each side), 30 of it given back by B's application.
    await send('internal', transferBody(a.uuid, b.cvu, 100));
    const [deposit] = (await t.dataSource.query(
      `SELECT linked_transfer_id::text AS id FROM transfers WHERE id = $1`,
      [ids.internal],
    )) as { id: string }[];
    const reversal = await request(t.http)
      .post(`/v1/wallet/transactions/${deposit.id}/reversals`)
      .set('Authorization', bearer(two.tokenB))
      .send({ amount: 30, reason: 'partial' });
    expect(reversal.status).toBe(201);
    // External WITHDRAWs to every verdict, and two still in flight.
    for (const [name, amount, outcome] of [
      ['captured', 200, 'ACREDITADO'],
      ['errorDatos', 50, 'ERROR_DATOS'],
      ['sinGarantia', 60, 'SIN_GARANTIA'],
      ['errorAcreditacion', 70, 'ERROR_ACREDITACION'],
      ['iniciado', 80, undefined],
      ['enCurso', 90, 'present'],
    ] as const) {
      await send(name, transferBody(a.uuid, UNLISTED_CBU, amount));
      if (outcome === 'present') expect(await clearing.present(ids[name])).toBe(true);
      else if (outcome) expect(await clearing.settle(ids[name], outcome)).toBe('settled');
    }
    // External DEPOSITs pulled from elsewhere: credited, refused, in flight.
    for (const [name, amount, outcome] of [
      ['pulled', 300, 'ACREDITADO'],
      ['pullRefused', 40, 'SIN_GARANTIA'],
      ['pullInFlight', 20, undefined],
    ] as const) {
      await send(name, transferBody(a.uuid, UNLISTED_CBU, amount, { movementType: 'DEPOSIT' }));
      if (outcome) expect(await clearing.settle(ids[name], outcome)).toBe('settled');
    }
    // The rail returns 120 of the captured 200; someone elsewhere pays 250.75 into B.
    ids.returned = (
      await t.app
        .get(ReversalsService)
        .returnFromRail(
          { transferId: ids.captured, amount: '120', reason: 'returned' },
          cliActor('transfers return'),
        )
    ).transferId;
    ids.inbound = (
      await t.app.get(TransfersService).inbound(
        {
          cvu: b.cvu,
          amount: 250.75,
          fromIdentifier: PAYER.number,
          fromName: PAYER.name,
          fromTaxId: PAYER.cuit,
          concept: 'VAR',
        },
        cliActor('transfers inbound'),
      )
    ).transferId;
  });
  afterAll(() => t.close());

  it('passes on a clean ledger with transfers in every state, returns, reversals and inbound credits', async () => {
    const report = await expectClean();
    // HOLDS: the two in flight, 80 + 1.5 + 0.8 and 90 + 1.5 + 0.9. SETTLEMENT: 200 out, 120 returned, 300 pulled
    // in, 250.75 paid in. FEE_REVENUE: the internal transfer, the captured WITHDRAW and the credited DEPOSIT, 1.5
    // each. TAX_PAYABLE: 1 on each side of the internal transfer, 2 on the WITHDRAW, 3 on the DEPOSIT, 2.51 on the
    // inbound credit (250.75 × 0.01, half-even: decision 0098).
    expect(report.systemAccounts).toStrictEqual(systemAccounts());
  });

  it('reads one snapshot: a settlement that commits while it runs is not seen, neither its entry nor its status', async () => {
    // The rail's capture of the WITHDRAW of 90 in flight, made by hand: the entry, then the status, one
    // transaction. It holds the transfers table, so verify waits at its first read of it, after reading postings.
    const TAX_PAYABLE = systemAccountId('TAX_PAYABLE', 'ARS');
    const before = (await expectClean()).entries;
    const held = await holdTransaction(t.dataSource, [
      [`LOCK TABLE transfers IN ACCESS EXCLUSIVE MODE`, []],
      [
        `SELECT ledger_post($1, 'TRANSFER_CAPTURE', $2, NULL, 'test:by-hand', $3::uuid[], $4::numeric[], 'ARS')`,
        [appA, ids.enCurso, [HOLDS, SETTLEMENT, FEE_REVENUE, TAX_PAYABLE], ['-92.4', '90', '1.5', '0.9']],
      ],
      [`UPDATE transfers SET status = 'ACREDITADO' WHERE id = $1`, [ids.enCurso]],
    ]);
    try {
      const running = ledger.verify();
      await held.untilWaiting();
      await held.commit();
      const report = await running;
      expect(report).toMatchObject({
        ok: true,
        entries: before,
        systemAccounts: systemAccounts(),
        transferEntries: cleanTransferEntries,
      });
      // Read again, it sees the capture, and it agrees with the transfers too.
      expect(await ledger.verify()).toMatchObject({
        ok: true,
        entries: before + 1,
        systemAccounts: systemAccounts({
          HOLDS: ['82.300000', '82.300000'],
          SETTLEMENT: ['-380.750000', '-380.750000'],
          FEE_REVENUE: ['6.000000', '6.000000'],
          TAX_PAYABLE: ['10.410000', '10.410000'],
        }),
      });
    } finally {
      await held.release();
      const entries = (
        (await t.dataSource.query(
          `SELECT id::text AS id FROM journal_entries WHERE reference = $1 AND kind = 'TRANSFER_CAPTURE'`,
          [ids.enCurso],
        )) as { id: string }[]
      ).map((row) => row.id);
      await undo(entries);
      await t.dataSource.query(`UPDATE transfers SET status = 'EN_CURSO' WHERE id = $1`, [ids.enCurso]);
    }
    await expectClean();
  });

  it('reports a second release of a refused WITHDRAW: HOLDS short, the transfer named, in process and through the CLI', async () => {
    // 50 + 1.5 + 0.5 released once already by the rail's ERROR_DATOS.
    const entry = await post('TRANSFER_RELEASE', ids.errorDatos, [HOLDS, a.uuid], ['-52', '52']);
    try {
      const report = await ledger.verify();
      expect(report).toMatchObject({
        ok: false,
        unbalancedEntries: [],
        balanceMismatches: [],
        systemAccounts: systemAccounts({ HOLDS: ['122.700000', '174.700000'] }),
        transferEntries: oneWrongTransfer({
          transferId: ids.errorDatos,
          route: 'EXTERNAL',
          movementType: 'WITHDRAW',
          status: 'ERROR_DATOS',
          entries: ['TRANSFER_HOLD', 'TRANSFER_RELEASE', 'TRANSFER_RELEASE'],
          expected: ['TRANSFER_HOLD,TRANSFER_RELEASE'],
        }),
        overReversed: cleanOverReversed,
      });
      for (const total of report.totals) expect(total.sum).toBe('0.000000');
      const cli = await verifyCli();
      expect(cli.code).toBe(1);
      expect(cli.report).toStrictEqual(report);
    } finally {
      await undo([entry]);
    }
    await expectClean();
  });

  it('reports a WITHDRAW settled without its capture', async () => {
    // The in-flight WITHDRAW of 80 marked ACREDITADO by hand: its hold stays in HOLDS, nothing reached the others.
    await t.dataSource.query(`UPDATE transfers SET status = 'ACREDITADO' WHERE id = $1`, [ids.iniciado]);
    try {
      expect(await ledger.verify()).toMatchObject({
        ok: false,
        systemAccounts: systemAccounts({
          HOLDS: ['174.700000', '92.400000'],
          SETTLEMENT: ['-470.750000', '-390.750000'],
          FEE_REVENUE: ['4.500000', '6.000000'],
          TAX_PAYABLE: ['9.510000', '10.310000'],
        }),
        transferEntries: oneWrongTransfer({
          transferId: ids.iniciado,
          route: 'EXTERNAL',
          movementType: 'WITHDRAW',
          status: 'ACREDITADO',
          entries: ['TRANSFER_HOLD'],
          expected: ['TRANSFER_CAPTURE,TRANSFER_HOLD'],
        }),
      });
    } finally {
      await t.dataSource.query(`UPDATE transfers SET status = 'INICIADO' WHERE id = $1`, [ids.iniciado]);
    }
    await expectClean();
  });

  it('reports a hold of the wrong amount', async () => {
    // A WITHDRAW of 10 (no fee, no tax) whose hold took 11: one hold, as it should, but HOLDS is 1 over.
    const transfer = await copyTransfer(ids.iniciado, { amount: '10', fees: '0', taxes: '0' });
    const entry = await post('TRANSFER_HOLD', transfer, [a.uuid, HOLDS], ['-11', '11']);
    try {
      expect(await ledger.verify()).toMatchObject({
        ok: false,
        balanceMismatches: [],
        systemAccounts: systemAccounts({ HOLDS: ['185.700000', '184.700000'] }),
        transferEntries: { checked: 16, wrong: 0, first: [] },
      });
    } finally {
      await undo([entry], [transfer]);
    }
    await expectClean();
  });

  it('reports fee revenue posted without a transfer, and an entry of a transfer kind that names no transfer', async () => {
    const fee = await post('FEE_CORRECTION', null, [FEE_REVENUE, ADJUSTMENTS], ['5', '-5']);
    const ghost = randomUUID();
    const capture = await post('TRANSFER_CAPTURE', ghost, [HOLDS, SETTLEMENT], ['-3', '3']);
    try {
      expect(await ledger.verify()).toMatchObject({
        ok: false,
        systemAccounts: systemAccounts({
          HOLDS: ['171.700000', '174.700000'],
          SETTLEMENT: ['-467.750000', '-470.750000'],
          FEE_REVENUE: ['9.500000', '4.500000'],
        }),
        transferEntries: oneWrongTransfer({
          transferId: ghost,
          route: null,
          movementType: null,
          status: null,
          entries: ['TRANSFER_CAPTURE'],
          expected: [],
        }),
      });
    } finally {
      await undo([fee, capture]);
    }
    await expectClean();
  });

  it('reports a return beyond the amount of the WITHDRAW, its money booked as a return is', async () => {
    // 120 of 200 returned already; 100 more, with its entry (SETTLEMENT → the sender), as the function writes one.
    const transfer = await copyTransfer(ids.returned, { amount: '100' });
    const entry = await post('TRANSFER_RETURN', transfer, [SETTLEMENT, a.uuid], ['-100', '100']);
    try {
      const report = await ledger.verify();
      expect(report).toMatchObject({
        ok: false,
        systemAccounts: systemAccounts({ SETTLEMENT: ['-570.750000', '-570.750000'] }),
        transferEntries: { checked: 16, wrong: 0, first: [] },
        overReversed: {
          checked: 3,
          wrong: 1,
          first: [{ transferId: ids.captured, amount: '200.000000', reversed: '220.000000' }],
        },
      });
    } finally {
      await undo([entry], [transfer]);
    }
    await expectClean();
  });
});
