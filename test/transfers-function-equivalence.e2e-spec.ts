import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { CREATE_TRANSFER, CREATE_TRANSFERS } from '../migrations/1763900700000-TransferFunction.js';
import { uuidv7 } from '../src/common/ids/uuid-v7.js';
import { buildCvu } from '../src/modules/wallet/cvu.js';
import { MINOR_UNITS } from '../src/modules/wallet/money.js';
import { createTestDatabase } from './support/database.js';

/**
 * The current transfer function (wallet_create_transfers, src/modules/transfers/sql/) against the first ones
 * (migrations/1763900700000-TransferFunction.ts, installed beside it as *_v1): for every case, the same input
 * through both, each in a transaction that is rolled back, must give the same answer (or the same error,
 * SQLSTATE, DETAIL and HINT: a group of one's refusal compared with the single call's raised one) and write the
 * same rows (random ids, sequence numbers and timestamps masked). Single requests and groups,
 * every refusal, refusals that compete (which one wins), idempotency keys (replay, another body, a key twice in
 * a group, a key that wins over a refusal), fees and taxes, external transfers.
 */
describe('wallet_create_transfers: the current version answers and writes exactly what the first one did', () => {
  let database: { url: string; drop: () => Promise<void> };
  let db: pg.Client;
  const appA = randomUUID();
  const appB = randomUUID();
  const known = new Set<string>([appA, appB]);
  const EXTERNAL_CBU = '2850590940090418135201';
  let month = '';
  let year = '';
  const acct: Record<string, { id: string; cvu: string; owner: string }> = {};

  beforeAll(async () => {
    database = await createTestDatabase();
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
    const v1 = (sql: string) =>
      sql
        .replace('CREATE FUNCTION "wallet_create_transfers"', 'CREATE FUNCTION "wallet_create_transfers_v1"')
        .replace('CREATE FUNCTION "wallet_create_transfer"', 'CREATE FUNCTION "wallet_create_transfer_v1"')
        .replace('wallet_create_transfer(v_item)', 'wallet_create_transfer_v1(v_item)');
    await db.query(v1(CREATE_TRANSFER));
    await db.query(v1(CREATE_TRANSFERS));
    const now = new Date();
    month = `M${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
    year = `Y${now.getUTCFullYear()}`;

    await db.query(`INSERT INTO applications (id, name) VALUES ($1, 'eq-a'), ($2, 'eq-b')`, [appA, appB]);
    const company = randomUUID();
    known.add(company);
    await db.query(
      `INSERT INTO companies (id, app_id, name, legal_name, trade_name, company_type, tax_type, tax_value,
                              tax_condition, operation_country, legal_address)
       VALUES ($1, $2, 'Acme', 'Acme SA', 'Acme', 'SA', 'cuit', '30712345671', 'ri', 'AR', '{}')`,
      [company, appA],
    );
    // name: [app, status, currency, balance, fee type, fee, monthly/annual withdraw, monthly/annual deposit]
    const specs: [string, string, string, string, number, string, number, number, number, number, number][] =
      [
        ['payer', appA, 'ACTIVE', 'ARS', 1000, 'FIXED', 0, 1e6, 1e6, 1e6, 1e6],
        ['payee', appA, 'ACTIVE', 'ARS', 0, 'FIXED', 0, 1e6, 1e6, 1e6, 1e6],
        ['inactive', appA, 'INACTIVE', 'ARS', 1000, 'FIXED', 0, 1e6, 1e6, 1e6, 1e6],
        ['pending', appA, 'PENDING', 'ARS', 0, 'FIXED', 0, 1e6, 1e6, 1e6, 1e6],
        ['limited', appA, 'ACTIVE', 'ARS', 1000, 'PERCENTAGE', 1.5, 100, 150, 1e6, 1e6],
        ['capped', appA, 'ACTIVE', 'ARS', 0, 'FIXED', 0, 1e6, 1e6, 50, 80],
        ['company', appA, 'ACTIVE', 'ARS', 500, 'FIXED', 2, 1e6, 1e6, 1e6, 1e6],
        ['dollars', appA, 'ACTIVE', 'USD', 500, 'FIXED', 0, 1e6, 1e6, 1e6, 1e6],
        ['other-app', appB, 'ACTIVE', 'ARS', 500, 'FIXED', 0, 1e6, 1e6, 1e6, 1e6],
      ];
    let sequence = 7_000_000;
    for (const [name, app, status, currency, balance, feeType, fee, mw, aw, md, ad] of specs) {
      const id = randomUUID();
      const owner = name === 'company' ? company : randomUUID();
      known.add(id).add(owner);
      const cvu = buildCvu('0031', sequence++);
      acct[name] = { id, cvu, owner };
      if (name !== 'company') {
        await db.query(
          `INSERT INTO users (id, app_id, first_name, last_name, birthdate, sex, civil_status, nationality,
                              tax_id_type, tax_id, tax_condition, category, tax_exempt, legal_address)
           VALUES ($1, $2, 'Ana', $3, '1990-01-01', 'female', 'single', 'AR', 'cuil', $4, 'others',
                   'consumidorFinal', false, '{}')`,
          [owner, app, name, `2010000${sequence}`],
        );
      }
      await db.query(
        `INSERT INTO ledger_accounts (id, kind, code, currency, balance) VALUES ($1, 'WALLET', 'WALLET', $2, 0)`,
        [id, currency],
      );
      await db.query(
        `INSERT INTO wallet_accounts (id, app_id, owner_type, owner_id, cvu, alias, currency, status,
            monthly_deposit_limit, monthly_withdraw_limit, annual_deposit_limit, annual_withdraw_limit, limits_id,
            fee_type, fee_amount, fees_id, operado_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, gen_random_uuid(), $13, $14,
                 gen_random_uuid(), gen_random_uuid())`,
        [
          id,
          app,
          name === 'company' ? 'COMPANY' : 'USER',
          owner,
          cvu,
          `eq.${name}`,
          currency,
          status,
          md,
          mw,
          ad,
          aw,
          feeType,
          fee,
        ],
      );
      if (balance > 0) {
        await db.query(
          `SELECT ledger_post($1, 'BALANCE_ADJUSTMENT', $2::text, NULL, 'test', ARRAY[$5::uuid,
                  ledger_system_account('ADJUSTMENTS', $3)], ARRAY[$4::numeric, -$4::numeric], $3)`,
          [app, id, currency, balance, id],
        );
      }
    }
    // History before the cases: a used key with its answer, operated amounts, and a transfer in flight.
    const setup = [
      input('payer', 'payee', '100.00', { idempotencyKey: 'used', requestHash: 'h-used' }),
      input('limited', 'payee', '40.00'),
      input('limited', EXTERNAL_CBU, '30.00'),
    ];
    await db.query(`SELECT wallet_create_transfers($1::jsonb)`, [JSON.stringify(setup)]);
    // The masks below tell the cases' rows from these by their timestamps.
    await db.query(`SELECT pg_sleep(0.05)`);
  });
  afterAll(async () => {
    await db?.end();
    await database?.drop();
  });

  function input(
    from: string,
    to: string,
    amount: string,
    extra: Record<string, unknown> = {},
  ): Record<string, unknown> {
    const identifier = acct[to]?.cvu ?? to;
    return {
      appId: appA,
      subject: null,
      accountId: acct[from]?.id ?? from,
      amount,
      movementType: 'WITHDRAW',
      counterparty: {
        name: 'Someone',
        taxId: '20123456786',
        identifierType: identifier.startsWith('000') ? 'CVU' : 'CBU',
        identifier,
        branch: null,
      },
      concept: 'VAR',
      summary: null,
      actor: `client:${appA}`,
      taxRate: '0.006',
      minorUnits: MINOR_UNITS,
      month,
      year,
      idempotencyKey: null,
      requestHash: null,
      ...extra,
    };
  }

  const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
  const TIMESTAMP = /\d{4}-\d{2}-\d{2}[T ][\d:.]+(Z|[+-]\d{2}(:\d{2})?)?/g;
  const mask = (value: unknown): unknown =>
    JSON.parse(
      JSON.stringify(value)
        .replace(UUID, (id) => (known.has(id) ? id : 'ID'))
        .replace(TIMESTAMP, 'T')
        .replace(/"timestamp":\d+/g, '"timestamp":0'),
    );
  const sorted = (rows: unknown[]) => rows.map((row) => JSON.stringify(mask(row))).sort();

  /** Every row the call wrote, in a comparable form: rows of this transaction, balances, operated amounts. */
  async function written(): Promise<Record<string, string[]>> {
    const since = `(now() - interval '10 milliseconds')`;
    const query = async (sql: string) => sorted((await db.query(sql)).rows);
    return {
      transfers: await query(`SELECT * FROM transfers WHERE created_at >= ${since}`),
      history: await query(
        `SELECT transfer_id, from_status, to_status, at FROM transfer_status_path WHERE at >= ${since}`,
      ),
      entries: await query(`SELECT * FROM journal_entries WHERE created_at >= ${since}`),
      postings: await query(
        `SELECT entry_id, account_id, amount, currency FROM postings WHERE created_at >= ${since}`,
      ),
      // Each account's postings in the order statements and balances as of a time read them, (created_at, id):
      // the order the group's checks ran in, as the first function wrote them one transfer at a time. A hold
      // timed before the internal credit that paid for it shows a balance the account never had.
      postingOrder: (
        await db.query(
          `SELECT account_id, string_agg(amount::text, ' ' ORDER BY created_at, id) AS amounts
             FROM postings WHERE created_at >= ${since} GROUP BY account_id`,
        )
      ).rows
        .map((row: { account_id: string; amounts: string }) => `${row.account_id}: ${row.amounts}`)
        .sort(),
      events: await query(
        `SELECT id, app_id, event, subject, payload, status, attempts, generation, next_attempt_at
           FROM webhook_events WHERE created_at >= ${since}`,
      ),
      keys: await query(`SELECT * FROM idempotency_keys`),
      balances: await query(`SELECT id, kind, code, currency, balance FROM ledger_accounts`),
      // The months' rows: a year's operated amount is their sum (the first functions also kept a year row,
      // docs/decisions/0035-write-each-fact-once.md).
      operated: await query(
        `SELECT account_id, period, deposit, withdraw FROM operated_amounts WHERE period LIKE 'M%'`,
      ),
    };
  }

  async function call(fn: string, payload: unknown): Promise<unknown> {
    await db.query('BEGIN');
    try {
      let answer: unknown;
      try {
        const { rows } = await db.query(`SELECT ${fn}($1::jsonb) AS r`, [JSON.stringify(payload)]);
        answer = { result: mask(rows[0].r) };
      } catch (error) {
        const e = error as pg.DatabaseError;
        answer = { error: { code: e.code, message: e.message, detail: e.detail, hint: e.hint } };
        await db.query('ROLLBACK');
        await db.query('BEGIN');
      }
      return { answer, written: await written() };
    } finally {
      await db.query('ROLLBACK');
    }
  }

  /**
   * One request through the current entry point, a group of one (GroupReadsOnce dropped wallet_create_transfer),
   * its answer in the first function's terms: a refusal as the error wallet_refuse raised (SQLSTATE = code,
   * DETAIL = path, HINT = type); the rows as they are (a refusal writes none).
   */
  async function callOne(payload: Record<string, unknown>): Promise<unknown> {
    const outcome = (await call('wallet_create_transfers', [payload])) as {
      answer: { result?: Record<string, unknown>[] };
      written: unknown;
    };
    const first = outcome.answer.result?.[0];
    if (first === undefined || !('refused' in first)) {
      return { answer: first === undefined ? outcome.answer : { result: first }, written: outcome.written };
    }
    const refused = first.refused as { code: string; path: string; type: string; message: string };
    const error = { code: refused.code, message: refused.message, detail: refused.path, hint: refused.type };
    return { answer: { error }, written: outcome.written };
  }

  const single: [string, () => Record<string, unknown>][] = [
    ['internal, no key', () => input('payer', 'payee', '10.50')],
    [
      'internal with a key',
      () => input('payer', 'payee', '12.00', { idempotencyKey: 'k1', requestHash: 'h1' }),
    ],
    ['internal from a company, fixed fee', () => input('company', 'payee', '20.00')],
    ['internal with a percentage fee', () => input('limited', 'payee', '10.00')],
    ['internal, no tax', () => input('payer', 'payee', '7.77', { taxRate: '0' })],
    ['a user token of the owner', () => input('payer', 'payee', '5.00', { subject: acct.payer.owner })],
    ['a user token of someone else', () => input('payer', 'payee', '5.00', { subject: randomUUID() })],
    ['internal DEPOSIT', () => input('payer', 'payee', '5.00', { movementType: 'DEPOSIT' })],
    [
      'internal DEPOSIT with a used key',
      () =>
        input('payer', 'payee', '5.00', {
          movementType: 'DEPOSIT',
          idempotencyKey: 'used',
          requestHash: 'x',
        }),
    ],
    ['no such account', () => input(randomUUID(), 'payee', '5.00')],
    ['account of another application', () => input('other-app', 'payee', '5.00')],
    ['inactive sender', () => input('inactive', 'payee', '5.00')],
    ['inactive sender and too many decimals', () => input('inactive', 'payee', '5.001')],
    ['too many decimals', () => input('payer', 'payee', '5.001')],
    ['negative', () => input('payer', 'payee', '-5.00')],
    ['below 1', () => input('payer', 'payee', '0.50')],
    ['the same account', () => input('payer', 'payer', '5.00')],
    ['receiver not active', () => input('payer', 'pending', '5.00')],
    ['receiver in another currency', () => input('payer', 'dollars', '5.00')],
    ['insufficient funds', () => input('payer', 'payee', '999.00')],
    ['insufficient funds and over the limits', () => input('limited', 'capped', '2000.00')],
    ['sender monthly limit (in flight counted)', () => input('limited', 'payee', '31.00')],
    ['sender annual limit', () => input('limited', 'payee', '31.00', { month: 'M1999-01' })],
    ['receiver monthly deposit limit', () => input('payer', 'capped', '51.00')],
    [
      'receiver annual deposit limit',
      () => input('payer', 'capped', '49.00', { month: 'M1999-01', year: 'Y2999' }),
    ],
    ['unsupported currency', () => input('dollars', 'payee', '5.00', { minorUnits: { ARS: 2 } })],
    [
      'unsupported currency with a used key',
      () =>
        input('dollars', 'payee', '5.00', {
          minorUnits: { ARS: 2 },
          idempotencyKey: 'used',
          requestHash: 'h-used',
        }),
    ],
    [
      'replay of a used key',
      () => input('payer', 'payee', '100.00', { idempotencyKey: 'used', requestHash: 'h-used' }),
    ],
    [
      'replay of a used key that would now be refused',
      () => input('payer', 'payee', '100000.00', { idempotencyKey: 'used', requestHash: 'h-used' }),
    ],
    [
      'a used key with another body',
      () => input('payer', 'payee', '3.00', { idempotencyKey: 'used', requestHash: 'other' }),
    ],
    [
      'a used key with another body that would be refused',
      () => input('inactive', 'payee', '3.00', { idempotencyKey: 'used', requestHash: 'other' }),
    ],
    [
      'external WITHDRAW',
      () => input('payer', EXTERNAL_CBU, '15.00', { idempotencyKey: 'k2', requestHash: 'h2' }),
    ],
    ['external WITHDRAW, insufficient funds', () => input('payer', EXTERNAL_CBU, '995.00')],
    ['external DEPOSIT', () => input('payer', EXTERNAL_CBU, '15.00', { movementType: 'DEPOSIT' })],
    [
      'external DEPOSIT not covering fee and tax',
      () => input('company', EXTERNAL_CBU, '2.00', { movementType: 'DEPOSIT' }),
    ],
  ];

  it.each(single)('single: %s', async (_name, make) => {
    const payload = make();
    const v1 = await call('wallet_create_transfer_v1', payload);
    const head = await callOne(payload);
    expect(head).toStrictEqual(v1);
  });

  const groups: [string, () => Record<string, unknown>[]][] = [
    // (but the unsupported currency: an error, not a refusal, fails the whole group; see the last test)
    [
      'every single case as one group',
      () => single.map(([, make]) => make()).filter((item) => item.minorUnits === MINOR_UNITS),
    ],
    [
      'a refused transfer between accepted ones, later ones see the earlier ones',
      () => [
        input('payer', 'payee', '600.00'),
        input('payer', 'payee', '600.00'),
        input('payer', 'capped', '30.00'),
        input('payer', 'capped', '30.00'),
        input('payee', 'payer', '50.00'),
      ],
    ],
    [
      'the same key twice in a group, and a key whose first use was refused',
      () => [
        input('payer', 'payee', '10.00', { idempotencyKey: 'g1', requestHash: 'hg1' }),
        input('payer', 'payee', '10.00', { idempotencyKey: 'g1', requestHash: 'hg1' }),
        input('payer', 'payee', '11.00', { idempotencyKey: 'g1', requestHash: 'other' }),
        input('payer', 'payee', '5000.00', { idempotencyKey: 'g2', requestHash: 'hg2' }),
        input('payer', 'payee', '12.00', { idempotencyKey: 'g2', requestHash: 'hg2' }),
        input('payer', 'payee', '13.00', { idempotencyKey: 'g2', requestHash: 'hg2' }),
      ],
    ],
    [
      'limits consumed inside the group',
      () => [
        input('limited', 'payee', '20.00'),
        input('limited', 'payee', '20.00'),
        input('limited', EXTERNAL_CBU, '5.00'),
        input('limited', 'payee', '5.00'),
        input('company', 'capped', '25.00'),
        input('company', 'capped', '25.00'),
        input('company', 'capped', '1.00'),
      ],
    ],
    // Since 0035 a group of one month adds up its internal transfers' balances and operated amounts and writes
    // them once: every later check must still see them, whatever kind of transfer it is.
    [
      'money received in the group is spent in it, internally and externally; holds see the sums',
      () => [
        input('payer', 'payee', '500.00'),
        input('payee', 'company', '450.00'),
        input('payee', EXTERNAL_CBU, '140.00'),
        input('payee', EXTERNAL_CBU, '20.00'),
        input('payer', EXTERNAL_CBU, '390.00'),
        input('payer', 'payee', '5.00'),
        input('company', 'payer', '900.00'),
        input('company', 'payer', '30.00'),
      ],
    ],
    [
      'a receiver deposit limit reached across the group, with an external DEPOSIT between',
      () => [
        input('payer', 'capped', '20.00'),
        input('payee', 'capped', '0.00'),
        input('capped', EXTERNAL_CBU, '20.00', { movementType: 'DEPOSIT' }),
        input('company', 'capped', '20.00'),
        input('payer', 'capped', '10.00'),
        input('payer', 'capped', '1.00'),
      ],
    ],
    [
      'a group across the end of a month: each transfer writes its own amounts',
      () => [
        input('limited', 'payee', '20.00'),
        input('limited', 'payee', '20.00', { month: 'M1999-12', year: 'Y1999' }),
        input('limited', 'payee', '20.00'),
        input('payer', 'limited', '40.00', { month: 'M1999-12', year: 'Y1999' }),
        input('limited', 'payee', '30.00'),
      ],
    ],
  ];

  it.each(groups)('group: %s', async (_name, make) => {
    const payload = make();
    const v1 = await call('wallet_create_transfers_v1', payload);
    const head = await call('wallet_create_transfers', payload);
    expect(head).toStrictEqual(v1);
    expect(((head as { answer: { result: unknown[] } }).answer.result ?? []).length).toBe(payload.length);
  });

  it('a group with a failure that is not a refusal fails whole, in both versions', async () => {
    const payload = [
      input('payer', 'payee', '10.00'),
      input('dollars', 'payee', '5.00', { minorUnits: { ARS: 2 } }),
    ];
    const v1 = await call('wallet_create_transfers_v1', payload);
    const head = await call('wallet_create_transfers', payload);
    expect(head).toStrictEqual(v1);
    expect(head).toMatchObject({ answer: { error: { message: 'unsupported currency USD' } } });
  });
  // Not a comparison: decision 0066. The API makes a new transfer's id and sends it with the request
  // (TransferRequest.id, ReversalRequest.id), so that a call whose answer was lost can be looked up by it; the
  // functions write the answered row under it and make every other id themselves, as before.
  it("writes a new transfer under its request's id, and makes every other id itself; a replay answers the stored id", async () => {
    const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const [internal, external, replayed, reversal, rail] = Array.from({ length: 5 }, () => uuidv7());
    type Answer = { row?: { id: string }; replay?: { id: string } };
    await db.query('BEGIN');
    try {
      const created = (
        await db.query<{ r: Answer[] }>('SELECT wallet_create_transfers($1::jsonb) AS r', [
          JSON.stringify([
            input('payer', 'payee', '10.00', { id: internal }),
            input('payer', EXTERNAL_CBU, '11.00', { id: external }),
            input('payer', 'payee', '100.00', {
              id: replayed,
              idempotencyKey: 'used',
              requestHash: 'h-used',
            }),
            input('payer', 'payee', '12.00'), // as sent before: no id
          ]),
        ])
      ).rows[0].r;
      expect(created.map((answer) => answer.row?.id ?? answer.replay?.id)).toEqual([
        internal,
        external,
        expect.not.stringMatching(replayed),
        expect.stringMatching(V7),
      ]);
      expect(created[2].replay).toBeDefined();
      const deposit = async (withdraw: string) =>
        (
          await db.query<{ id: string }>('SELECT linked_transfer_id AS id FROM transfers WHERE id = $1', [
            withdraw,
          ])
        ).rows[0].id;
      const internalDeposit = await deposit(internal);
      const ids = async (sql: string, values: unknown[]) =>
        (await db.query<{ id: string }>(sql, values)).rows.map((row) => row.id);
      // The WITHDRAW is the request's; its DEPOSIT, journal entry and event are the database's, time-ordered.
      expect(internalDeposit).toMatch(V7);
      expect(
        await ids(`SELECT id FROM journal_entries WHERE reference = $1 AND kind = 'INTERNAL_TRANSFER'`, [
          internal,
        ]),
      ).toEqual([expect.stringMatching(V7)]);
      expect(await ids(`SELECT id FROM webhook_events WHERE subject = $1`, [internalDeposit])).toEqual([
        expect.stringMatching(V7),
      ]);
      expect(await ids('SELECT id FROM transfers WHERE id = $1', [replayed])).toEqual([]);

      const reverse = async (request: Record<string, unknown>) =>
        (
          await db.query<{ r: Answer }>('SELECT wallet_reverse_transfer($1::jsonb) AS r', [
            JSON.stringify({
              subject: null,
              reason: 'back',
              actor: `client:${appA}`,
              auditActor: `client:${appA}`,
              requestId: null,
              route: 'test',
              minorUnits: MINOR_UNITS,
              idempotencyKey: null,
              requestHash: null,
              ...request,
            }),
          ])
        ).rows[0].r;
      // A reversal answers the new WITHDRAW of the account that gives back: the request's id; its DEPOSIT another.
      const reversed = await reverse({
        kind: 'reversal',
        id: reversal,
        appId: appA,
        transferId: internalDeposit,
        amount: '1',
      });
      expect(reversed.row?.id).toBe(reversal);
      expect(await deposit(reversal)).toEqual(expect.stringMatching(V7));
      expect(await deposit(reversal)).not.toBe(reversal);
      // A return answers the DEPOSIT of the account the rail paid back: the request's id.
      await db.query(`UPDATE transfers SET status = 'ACREDITADO' WHERE id = $1`, [external]);
      const returned = await reverse({
        kind: 'return',
        id: rail,
        appId: null,
        transferId: external,
        amount: null,
      });
      expect(returned.row?.id).toBe(rail);
      expect(await ids('SELECT reversal_of AS id FROM transfers WHERE id = $1', [rail])).toEqual([external]);
    } finally {
      await db.query('ROLLBACK');
    }
  });
  // Not a comparison: the setting of migrations/1763901000000-TransferPlans.ts (docs/decisions/0022). On these
  // tiny, freshly analysed tables the planner would pick sequential scans, and a connection keeps those plans
  // while the tables grow; the functions must probe indexes instead.
  it('plans every statement of the current functions as an index probe, even on tiny tables', async () => {
    const tables = [
      'transfers',
      'operated_amounts',
      'ledger_accounts',
      'wallet_accounts',
      'idempotency_keys',
    ];
    const seqScans = async (): Promise<Record<string, number>> => {
      await db.query('SELECT pg_stat_force_next_flush()'); // this connection's counts so far, flushed as it ends
      await db.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await db.query<{ relname: string; n: number }>(
        'SELECT relname, seq_scan::int AS n FROM pg_stat_user_tables WHERE relname = ANY($1) ORDER BY relname',
        [tables],
      );
      return Object.fromEntries(rows.map((row) => [row.relname, row.n]));
    };
    await db.query('ANALYZE');
    const before = await seqScans();
    expect(Object.keys(before)).toHaveLength(tables.length);
    await db.query('BEGIN');
    try {
      // More than five calls (it keeps generic plans from the first, plan_cache_mode), groups of two and of one.
      for (let i = 0; i < 7; i++) {
        await db.query('SELECT wallet_create_transfers($1::jsonb)', [
          JSON.stringify([
            input('payer', 'payee', '1.00', { idempotencyKey: `plan-${i}`, requestHash: `h-${i}` }),
            input('payer', EXTERNAL_CBU, '1.00'),
          ]),
        ]);
        await db.query('SELECT wallet_create_transfers($1::jsonb)', [
          JSON.stringify([input('payer', 'payee', '1.00')]),
        ]);
      }
    } finally {
      await db.query('ROLLBACK');
    }
    expect(await seqScans()).toStrictEqual(before);
  });
  // Not a comparison: the group's lock query (docs/decisions/0035) probes the index once per account it names;
  // planned as `IN (subquery)` it read the whole key of ledger_accounts and wallet_accounts, every call.
  it('locks a group with index probes: what it reads grows with the group, not with the accounts', async () => {
    const extra = 300;
    await db.query(
      `WITH l AS (INSERT INTO ledger_accounts (id, kind, code, currency, balance)
                  SELECT gen_random_uuid(), 'WALLET', 'WALLET', 'ARS', 0 FROM generate_series(1, $1) RETURNING id)
       INSERT INTO wallet_accounts (id, app_id, owner_type, owner_id, cvu, alias, currency, status,
          monthly_deposit_limit, monthly_withdraw_limit, annual_deposit_limit, annual_withdraw_limit, limits_id,
          fee_type, fee_amount, fees_id, operado_id)
       SELECT l.id, $2, 'USER', gen_random_uuid(), '00000' || lpad((row_number() OVER ())::text, 17, '0'),
              'eq.extra.' || row_number() OVER (), 'ARS', 'ACTIVE', 1e6, 1e6, 1e6, 1e6, gen_random_uuid(), 'FIXED',
              0, gen_random_uuid(), gen_random_uuid()
         FROM l`,
      [extra, appA],
    );
    await db.query('ANALYZE ledger_accounts, wallet_accounts');
    const indexReads = async (): Promise<number> => {
      await db.query('SELECT pg_stat_force_next_flush()');
      await db.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await db.query<{ n: number }>(
        `SELECT sum(idx_tup_read)::int AS n FROM pg_stat_user_indexes
          WHERE relname IN ('ledger_accounts', 'wallet_accounts')`,
      );
      return rows[0].n;
    };
    const before = await indexReads();
    await db.query('BEGIN');
    try {
      await db.query('SELECT wallet_create_transfers($1::jsonb)', [
        JSON.stringify([input('payer', 'payee', '1.00')]),
      ]);
    } finally {
      await db.query('ROLLBACK');
    }
    const read = (await indexReads()) - before;
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(extra / 10);
  });
});
