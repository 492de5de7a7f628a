import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../src/data-source.js';
import { buildCvu } from '../src/modules/wallet/cvu.js';
import { createTestDatabase } from './support/database.js';

/**
 * migrations/1763901600000-WriteEachFactOnce.ts moves existing data (docs/decisions/0035-write-each-fact-once.md):
 * on a database written by the previous functions (creation history rows, year rows of operated amounts), `up`
 * leaves every transfer's status path and every year's operated amounts readable exactly as before (the view
 * `transfer_status_path`, the sum of the months), and `down` writes the removed rows back.
 */
describe('WriteEachFactOnce: the data written before it', () => {
  let database: { url: string; drop: () => Promise<void> };
  let dataSource: DataSource;
  const app = randomUUID();
  const accounts = [randomUUID(), randomUUID()];
  const transfers = {
    internalW: randomUUID(),
    internalD: randomUUID(),
    settled: randomUUID(),
    failed: randomUUID(),
    inFlight: randomUUID(),
  };

  type Path = Record<string, [string | null, string][]>;
  const historyPaths = async (): Promise<Path> =>
    pathsOf(
      await dataSource.query(
        `SELECT transfer_id, from_status, to_status FROM transfer_status_history ORDER BY transfer_id, id`,
      ),
    );
  const viewPaths = async (): Promise<Path> =>
    pathsOf(
      await dataSource.query(
        `SELECT transfer_id, from_status, to_status FROM transfer_status_path ORDER BY transfer_id, step`,
      ),
    );
  const yearRows = async () =>
    dataSource.query(
      `SELECT account_id, period, deposit::text, withdraw::text, created_at, updated_at FROM operated_amounts
        WHERE period LIKE 'Y%' ORDER BY account_id, period`,
    );
  const yearsFromMonths = async () =>
    dataSource.query(
      `SELECT account_id, 'Y' || substr(period, 2, 4) AS period, sum(deposit)::text AS deposit,
              sum(withdraw)::text AS withdraw, min(created_at) AS created_at, max(updated_at) AS updated_at
         FROM operated_amounts WHERE period LIKE 'M%' GROUP BY account_id, substr(period, 2, 4)
        ORDER BY account_id, period`,
    );
  const indexes = async () =>
    (
      await dataSource.query(
        `SELECT indexname FROM pg_indexes WHERE indexname IN ('idx_postings_account', 'idx_journal_entries_reference')
          ORDER BY indexname`,
      )
    ).map((row: { indexname: string }) => row.indexname);

  let before: { paths: Path; years: unknown[] };

  /** Reverts the migrations from the last one down to this one (the later ones touch none of its data). */
  const undoThroughWriteEachFactOnce = async () => {
    for (;;) {
      const [last] = (await dataSource.query(
        'SELECT name FROM schema_migrations ORDER BY id DESC LIMIT 1',
      )) as { name: string }[];
      await dataSource.undoLastMigration({ transaction: 'each' });
      if (last.name === 'WriteEachFactOnce1763901600000') return;
    }
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    dataSource = new DataSource(dataSourceOptions(database.url, 2, 'write-each-fact-once'));
    await dataSource.initialize();
    // The schema before the migration, written as the previous functions wrote it.
    await undoThroughWriteEachFactOnce();
    await dataSource.query(`INSERT INTO applications (id, name) VALUES ($1, 'facts')`, [app]);
    for (const [n, id] of accounts.entries()) {
      const owner = randomUUID();
      await dataSource.query(
        `INSERT INTO users (id, app_id, first_name, last_name, birthdate, sex, civil_status, nationality,
                            tax_id_type, tax_id, tax_condition, category, tax_exempt, legal_address)
         VALUES ($1, $2, 'Ana', 'Facts', '1990-01-01', 'female', 'single', 'AR', 'cuil', $3, 'others',
                 'consumidorFinal', false, '{}')`,
        [owner, app, `2010000${7100 + n}`],
      );
      await dataSource.query(
        `INSERT INTO ledger_accounts (id, kind, code, currency, balance) VALUES ($1, 'WALLET', 'WALLET', 'ARS', 0)`,
        [id],
      );
      await dataSource.query(
        `INSERT INTO wallet_accounts (id, app_id, owner_type, owner_id, cvu, alias, currency, status,
            monthly_deposit_limit, monthly_withdraw_limit, annual_deposit_limit, annual_withdraw_limit, limits_id,
            fee_type, fee_amount, fees_id, operado_id)
         VALUES ($1, $2, 'USER', $3, $4, $5, 'ARS', 'ACTIVE', 1e6, 1e6, 1e6, 1e6, gen_random_uuid(), 'FIXED', 0,
                 gen_random_uuid(), gen_random_uuid())`,
        [id, app, owner, buildCvu('0031', 7_100_000 + n), `facts.${n}`],
      );
    }
    const [a, b] = accounts;
    const transfer = (id: string, account: string, movement: string, status: string, route: string) =>
      dataSource.query(
        `INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name,
           counterparty_tax_id, counterparty_identifier_type, counterparty_identifier, amount, currency, concept)
         VALUES ($1, $2, $3, $4, $5, $6, 'Otro', '20123456786', 'CBU', '2850590940090418135201', 10, 'ARS', 'VAR')`,
        [id, app, account, movement, status, route],
      );
    const steps = (id: string, path: [string | null, string][]) =>
      dataSource.query(
        `INSERT INTO transfer_status_history (transfer_id, from_status, to_status)
         SELECT $1, s->>0, s->>1 FROM jsonb_array_elements($2::jsonb) AS s`,
        [id, JSON.stringify(path)],
      );
    await transfer(transfers.internalW, a, 'WITHDRAW', 'ACREDITADO', 'INTERNAL');
    await transfer(transfers.internalD, b, 'DEPOSIT', 'ACREDITADO', 'INTERNAL');
    await transfer(transfers.settled, a, 'WITHDRAW', 'ACREDITADO', 'EXTERNAL');
    await transfer(transfers.failed, a, 'WITHDRAW', 'SIN_GARANTIA', 'EXTERNAL');
    await transfer(transfers.inFlight, b, 'DEPOSIT', 'INICIADO', 'EXTERNAL');
    // Written in the order the service wrote them: each transfer's creation, then the clearing steps.
    for (const id of [transfers.internalW, transfers.internalD])
      await steps(id, [
        [null, 'COMMITING'],
        ['COMMITING', 'ACREDITADO'],
      ]);
    for (const id of [transfers.settled, transfers.failed, transfers.inFlight])
      await steps(id, [
        [null, 'COMMITING'],
        ['COMMITING', 'INICIADO'],
      ]);
    await steps(transfers.settled, [['INICIADO', 'EN_CURSO']]);
    await steps(transfers.failed, [['INICIADO', 'SIN_GARANTIA']]);
    await steps(transfers.settled, [['EN_CURSO', 'ACREDITADO']]);
    // Operated amounts as wallet_add_operated kept them: the month's row and the year's, in the same statement.
    for (const [account, month, deposit, withdraw] of [
      [a, 'M2025-12', '7.5', '0'],
      [a, 'M2026-01', '100.25', '40'],
      [a, 'M2026-11', '0', '19.75'],
      [b, 'M2026-11', '250', '0'],
    ] as const) {
      await dataSource.query(`SELECT wallet_add_operated($1, 'deposit', $2, $3, $4)`, [
        account,
        deposit,
        month,
        `Y${month.slice(1, 5)}`,
      ]);
      await dataSource.query(`SELECT wallet_add_operated($1, 'withdraw', $2, $3, $4)`, [
        account,
        withdraw,
        month,
        `Y${month.slice(1, 5)}`,
      ]);
    }
    before = { paths: await historyPaths(), years: await yearRows() };
  });
  afterAll(async () => {
    if (dataSource?.isInitialized) await dataSource.destroy();
    await database?.drop();
  });

  it('had the rows the migration moves', () => {
    expect(Object.keys(before.paths)).toHaveLength(5);
    expect(before.paths[transfers.settled]).toStrictEqual([
      [null, 'COMMITING'],
      ['COMMITING', 'INICIADO'],
      ['INICIADO', 'EN_CURSO'],
      ['EN_CURSO', 'ACREDITADO'],
    ]);
    expect(before.years).toHaveLength(3); // a: 2025 and 2026; b: 2026
  });

  it('up: every status path and every year read as before, from fewer rows', async () => {
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await viewPaths()).toStrictEqual(before.paths);
    // Only the clearing steps are stored.
    expect(await historyPaths()).toStrictEqual({
      [transfers.settled]: [
        ['INICIADO', 'EN_CURSO'],
        ['EN_CURSO', 'ACREDITADO'],
      ],
      [transfers.failed]: [['INICIADO', 'SIN_GARANTIA']],
    });
    expect(await yearRows()).toStrictEqual([]);
    expect(await yearsFromMonths()).toStrictEqual(before.years);
    expect(await indexes()).toStrictEqual([]);
  });

  it('after up, wallet_add_operated keeps the month only', async () => {
    const [a] = accounts;
    await dataSource.query(`SELECT wallet_add_operated($1, 'deposit', 5, 'M2026-11', 'Y2026')`, [a]);
    const rows = await dataSource.query(
      `SELECT period, deposit::text FROM operated_amounts WHERE account_id = $1 ORDER BY period`,
      [a],
    );
    expect(rows).toStrictEqual([
      { period: 'M2025-12', deposit: '7.500000' },
      { period: 'M2026-01', deposit: '100.250000' },
      { period: 'M2026-11', deposit: '5.000000' },
    ]);
    await dataSource.query(`SELECT wallet_add_operated($1, 'deposit', -5, 'M2026-11', 'Y2026')`, [a]);
  });

  it('down: the removed rows are written back', async () => {
    await undoThroughWriteEachFactOnce();
    expect(await historyPaths()).toStrictEqual(before.paths);
    const years = (await yearRows()) as { period: string; updated_at: Date }[];
    const expected = before.years as { period: string; updated_at: Date }[];
    // The year rows come back with their amounts and their first creation; the test's own later writes moved
    // the 2026 months' updated_at, so that column is compared where they did not.
    expect(years.map(({ updated_at: _, ...row }) => row)).toStrictEqual(
      expected.map(({ updated_at: _, ...row }) => row),
    );
    const y2025 = (rows: { period: string; updated_at: Date }[]) =>
      rows.find((row) => row.period === 'Y2025');
    expect(y2025(years)?.updated_at).toStrictEqual(y2025(expected)?.updated_at);
    expect(await indexes()).toStrictEqual(['idx_journal_entries_reference', 'idx_postings_account']);
    // And up again leaves the head schema.
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await viewPaths()).toStrictEqual(before.paths);
  });
});

function pathsOf(rows: { transfer_id: string; from_status: string | null; to_status: string }[]) {
  const paths: Record<string, [string | null, string][]> = {};
  for (const row of rows) (paths[row.transfer_id] ??= []).push([row.from_status, row.to_status]);
  return paths;
}
