import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { DataSource, type Logger, MigrationExecutor } from 'typeorm';
import { MIGRATIONS } from '../migrations/index.js';
import { createIndexConcurrently, functionDefinitions, sha256Of } from '../migrations/sql.js';
import { migrateWithLock } from '../src/common/database/database-runtime.js';
import { dataSourceOptions } from '../src/data-source.js';
import { createEmptyDatabase, createTestDatabase } from './support/database.js';
import { factLine, type SchemaFact, schemaDifferences, schemaSnapshot } from './support/schema-snapshot.js';

/** The SQL TypeORM would run to make the database match the entities (nothing, when there is no drift). */
async function pendingSchemaChanges(dataSource: DataSource): Promise<string[]> {
  const sql = await dataSource.driver.createSchemaBuilder().log();
  return sql.upQueries.map((query) => query.query.replace(/\s+/g, ' ').trim());
}

const appliedMigrations = async (dataSource: DataSource): Promise<string[]> =>
  (await dataSource.query<{ name: string }[]>('SELECT name FROM schema_migrations ORDER BY id')).map(
    (row) => row.name,
  );

describe('migrations and entities', () => {
  let database: { url: string; drop: () => Promise<void> };
  let dataSource: DataSource;
  const allMigrations = MIGRATIONS.map((migration) => new migration().name);

  beforeAll(async () => {
    database = await createTestDatabase();
    dataSource = new DataSource(dataSourceOptions(database.url, 2, 'drift'));
    await dataSource.initialize();
  });
  afterAll(async () => {
    if (dataSource?.isInitialized) await dataSource.destroy();
    await database?.drop();
  });

  const expectNoDrift = async () => {
    const pending = await pendingSchemaChanges(dataSource);
    if (pending.length > 0) {
      throw new Error(
        `The entities and the migrations describe different schemas; TypeORM would run:\n  ${pending.join(';\n  ')}`,
      );
    }
    expect(pending).toEqual([]);
  };

  it('starts from a database with every migration applied', async () => {
    expect(allMigrations.length).toBeGreaterThan(0);
    await expect(appliedMigrations(dataSource)).resolves.toEqual(allMigrations);
    await expect(dataSource.showMigrations()).resolves.toBe(false);
  });

  it('has entities that match the migrated schema (no drift)', async () => {
    await expectNoDrift();
  });

  it('applies nothing when migrated again', async () => {
    await expect(dataSource.runMigrations({ transaction: 'each' })).resolves.toEqual([]);
    await expect(appliedMigrations(dataSource)).resolves.toEqual(allMigrations);
  });

  it('reverts the last migration and applies it again (down/up round trip)', async () => {
    const last = allMigrations[allMigrations.length - 1];
    await dataSource.undoLastMigration({ transaction: 'each' });
    await expect(appliedMigrations(dataSource)).resolves.toEqual(allMigrations.slice(0, -1));
    await expect(dataSource.showMigrations()).resolves.toBe(true);

    const applied = await dataSource.runMigrations({ transaction: 'each' });
    expect(applied.map((migration) => migration.name)).toEqual([last]);
    await expect(appliedMigrations(dataSource)).resolves.toEqual(allMigrations);

    // The round trip leaves the same schema the entities describe.
    await expectNoDrift();
  });

  /** The live definition of one function, as PostgreSQL prints it. */
  const liveDefinition = async (name: string) =>
    (await functionDefinitions((sql, params) => dataSource.query(sql, params)))[name];
  /** The live definitions of the functions named, by name order. */
  const definitionsOf = async (names: string[]) =>
    Object.entries(await functionDefinitions((sql, params) => dataSource.query(sql, params)))
      .filter(([name]) => names.includes(name))
      .map(([name, definition]) => ({ name, definition }));
  /** How many times each definition calls `call`. */
  const calls = (rows: { definition: string }[], call: string) =>
    rows.map((row) => row.definition.split(call).length - 1);
  /**
   * `after` (definitions whose ids are time-ordered: `uuidv7` calls each, no random one) against what undoing the
   * last migration leaves: the same definitions, every uuidv7() a gen_random_uuid() again.
   */
  const expectRandomIdsBack = async (
    after: { definition: string }[],
    uuidv7: number[],
    definitions: () => Promise<{ definition: string }[]>,
  ) => {
    expect(calls(after, 'uuidv7()')).toEqual(uuidv7);
    expect(calls(after, 'gen_random_uuid()')).toEqual([0, 0]);
    await dataSource.undoLastMigration({ transaction: 'each' });
    const before = await definitions();
    expect(calls(before, 'uuidv7()')).toEqual([0, 0]);
    expect(before.map((row) => row.definition)).toEqual(
      after.map((row) => row.definition.replaceAll('uuidv7()', 'gen_random_uuid()')),
    );
  };
  /** Migrations undone, last first, until `name` is the last one applied. */
  const undoUntil = async (name: string) => {
    while ((await appliedMigrations(dataSource)).at(-1) !== name) {
      await dataSource.undoLastMigration({ transaction: 'each' });
    }
  };

  it('TimeOrderedIds down gives the money path its random ids back, and up the time-ordered ones', async () => {
    const definitions = () => definitionsOf(['wallet_transfer_try', 'wallet_write_internal']);
    // Back to the schema TimeOrderedIds left (GroupReadsOnce later folded wallet_transfer_try into the group).
    await undoUntil('TimeOrderedIds1763901900000');
    const after = await definitions();
    await expectRandomIdsBack(after, [3, 1], definitions);
    await dataSource.runMigrations({ transaction: 'each' });
    // Up to the last migration again: wallet_transfer_try is folded into wallet_create_transfers (GroupReadsOnce).
    expect(await definitions()).toEqual(after.filter((row) => row.name === 'wallet_write_internal'));
  });

  it('TimeOrderedIdsOffTheHotPath down gives ledger_post and wallet_reverse_transfer their random ids back, and up the time-ordered ones', async () => {
    const definitions = () => definitionsOf(['ledger_post', 'wallet_reverse_transfer']);
    const latest = await definitions();
    await undoUntil('TimeOrderedIdsOffTheHotPath1763902500000');
    const after = await definitions();
    expect(after.map((row) => row.name)).toEqual(['ledger_post', 'wallet_reverse_transfer']);
    await expectRandomIdsBack(after, [1, 3], definitions);
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await definitions()).toEqual(latest);
  });

  /**
   * The claim functions, old and new (webhook_claim calls webhook_claim_for_delivery from WebhookClaimForDelivery
   * until DropOldWebhookClaim drops it).
   */
  const claims = () => definitionsOf(['webhook_claim', 'webhook_claim_for_delivery']);
  /** The new claim's definition among `claims()`. */
  const newClaim = (rows: { name: string; definition: string }[]) =>
    rows.find((row) => row.name === 'webhook_claim_for_delivery')!.definition;

  it('WebhookClaimLockOrder down puts the claim without its lock back exactly, and up the one with it', async () => {
    const claim = () => liveDefinition('webhook_claim');
    const latest = await claims();
    expect(newClaim(latest)).toContain('ORDER BY e.id FOR UPDATE OF e');
    await undoUntil('WebhookClaimLockOrder1763902000000');
    expect(await claim()).toContain('ORDER BY e.id FOR UPDATE OF e');
    await dataSource.undoLastMigration({ transaction: 'each' });
    // The definition WebhookBatches installed (its file's text below the header, at the commit before this one).
    expect(sha256Of(await claim())).toBe('7370df8de93762fba82aa495b1e4265af86392446510ca52894db5dddf41b98c');
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await claims()).toEqual(latest);
  });

  it('WebhookClaimWithoutFlushWait down gives the claim back without its SET LOCAL, and up with it', async () => {
    const claim = () => liveDefinition('webhook_claim');
    const latest = await claims();
    const statement = '  SET LOCAL synchronous_commit TO off;\n';
    expect(newClaim(latest)).toContain(`BEGIN\n${statement}  RETURN QUERY`);
    await undoUntil('WebhookClaimWithoutFlushWait1763902600000');
    const after = await claim();
    expect(after).toContain(`BEGIN\n${statement}  RETURN QUERY`);
    await undoUntil('TimeOrderedIdsOffTheHotPath1763902500000');
    const before = await claim();
    expect(before).not.toContain('synchronous_commit');
    expect(before).toBe(after.replace(statement, ''));
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await claims()).toEqual(latest);
  });

  /**
   * A worker's connection, as a worker of the code before decision 0076 has it: its claim a named statement on
   * `webhook_claim`, prepared (and planned) once and used again; one application with a webhook URL, and its
   * events, deleted at the end (the application stays: applications are never deleted).
   */
  const oldWorker = async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const app = randomUUID();
    await client.query(
      `INSERT INTO applications (id, name, webhook_url) VALUES ($1, 'old worker', 'https://example.test/hook')`,
      [app],
    );
    return {
      client,
      app,
      pendingEvents: async (count: number) =>
        (
          await client.query<{ id: string }>(
            `INSERT INTO webhook_events (id, app_id, event, subject, payload, next_attempt_at)
             SELECT gen_random_uuid(), $1, 'transfer_update', gen_random_uuid()::text, '{}'::jsonb, now()
               FROM generate_series(1, $2) RETURNING id`,
            [app, count],
          )
        ).rows.map((row) => row.id),
      claim: (id: string) =>
        client.query({
          name: 'webhook-claim',
          text: 'SELECT * FROM webhook_claim($1, $2)',
          values: [id, 30000],
        }),
      /** The new claim of one event (webhook_claim_for_delivery), as a worker of the code since 0076 makes it. */
      claimNew: (id: string) => client.query('SELECT * FROM webhook_claim_for_delivery($1, 30000)', [id]),
      /** An event's status, attempts and whether a lease holds it. */
      eventState: async (id: string) =>
        (
          await client.query<{ status: string; attempts: number; leased: boolean }>(
            `SELECT status, attempts, lease_until IS NOT NULL AS leased FROM webhook_events WHERE id = $1`,
            [id],
          )
        ).rows[0],
      end: async () => {
        await client.query(`DELETE FROM webhook_events WHERE app_id = $1`, [app]);
        await client.end();
      },
    };
  };
  const columns = (result: pg.QueryResult) => result.fields.map((field) => field.name);
  const OLD_COLUMNS = ['id', 'subject', 'payload', 'attempts', 'url'];

  it("WebhookClaimForDelivery: the new claim answers each event's application; down gives the old claim its own body back; a statement prepared on the old claim fails once the migrations after it have run", async () => {
    const latest = await claims();
    expect(latest.map((row) => row.name)).toEqual(['webhook_claim_for_delivery']);
    await undoUntil('WebhookClaimForDelivery1763904100000');
    // As WebhookClaimForDelivery left it: the old claim a call of the new one (DropOldWebhookClaim's down).
    const kept = await claims();
    expect(kept.map((row) => row.name)).toEqual(['webhook_claim', 'webhook_claim_for_delivery']);
    expect(kept[0].definition).toContain('FROM public.webhook_claim_for_delivery(p_ids, p_lease_ms) c');
    await dataSource.undoLastMigration({ transaction: 'each' });
    const before = await claims();
    expect(before.map((row) => row.name)).toEqual(['webhook_claim']);
    // The definition in effect at the commit before this migration (webhook_claim.sql below its header, as
    // WebhookClaimWithoutFlushWait loaded it).
    expect(sha256Of(before[0].definition)).toBe(
      '8800083fe411ce40c13cb7246b14ce35b905c28fc3890ab8a8db01ed66c99add',
    );

    const worker = await oldWorker();
    try {
      const [first, second] = await worker.pendingEvents(2);
      const old = await worker.claim(first);
      expect(columns(old)).toEqual(OLD_COLUMNS);

      await dataSource.runMigrations({ transaction: 'each' });
      expect(await claims()).toEqual(latest);

      // The old worker's statement names a function that is gone: it claims nothing, and the event waits.
      await expect(worker.claim(second)).rejects.toMatchObject({ code: '42883' });
      expect(await worker.eventState(second)).toEqual({ status: 'pending', attempts: 0, leased: false });
      // The new claim answers it, with the application.
      const claimed = await worker.claimNew(second);
      expect(columns(claimed)).toEqual([...OLD_COLUMNS, 'app_id']);
      expect(claimed.rows).toEqual([
        {
          id: second,
          subject: expect.any(String),
          payload: {},
          attempts: 1,
          url: 'https://example.test/hook',
          app_id: worker.app,
        },
      ]);
    } finally {
      await worker.end();
    }
  });

  it('DropOldWebhookClaim: until it runs, the old claim answers a statement prepared on it as before, without the flush wait; after it, that statement fails and leaves its event pending; down gives the old claim back', async () => {
    const latest = await claims();
    expect(latest.map((row) => row.name)).toEqual(['webhook_claim_for_delivery']);
    await undoUntil('PeriodOfCreatedAt1763905500000');
    expect((await claims()).map((row) => row.name)).toEqual(['webhook_claim', 'webhook_claim_for_delivery']);

    const worker = await oldWorker();
    try {
      const [first, second, third] = await worker.pendingEvents(3);
      const old = await worker.claim(first);
      expect(columns(old)).toEqual(OLD_COLUMNS);
      expect(old.rows).toEqual([
        {
          id: first,
          subject: expect.any(String),
          payload: {},
          attempts: 1,
          url: 'https://example.test/hook',
        },
      ]);
      // Either claim claims an event once: the lease taken by the new one holds against the old one.
      await worker.claimNew(second);
      await expect(worker.claim(second)).resolves.toMatchObject({ rowCount: 0 });
      // The old claim commits without waiting for the flush (the new one's SET LOCAL, for its transaction).
      await worker.client.query('BEGIN');
      try {
        await expect(worker.claim(third)).resolves.toMatchObject({ rowCount: 1 });
        const { rows } = await worker.client.query<{ s: string }>(
          `SELECT current_setting('synchronous_commit') AS s`,
        );
        expect(rows).toEqual([{ s: 'off' }]);
      } finally {
        await worker.client.query('ROLLBACK');
      }

      await dataSource.runMigrations({ transaction: 'each' });
      expect(await claims()).toEqual(latest);
      await expect(worker.claim(third)).rejects.toMatchObject({ code: '42883' });
      expect(await worker.eventState(third)).toEqual({ status: 'pending', attempts: 0, leased: false });
    } finally {
      await worker.end();
    }
  });

  it('ReversalsByUserToken down gives wallet_reverse_transfer back without the user-token checks, and up with them', async () => {
    const reverse = () => liveDefinition('wallet_reverse_transfer');
    const after = await reverse();
    expect(after).toContain("v_subject uuid := (p->>'subject')::uuid;");
    expect(after).toContain('only the owner of the account that received the transfer can give it back');
    await undoUntil('WebhookClaimWithoutFlushWait1763902600000');
    const before = await reverse();
    expect(before).not.toContain('v_subject');
    // The definition TimeOrderedIdsOffTheHotPath installed (its file's text below the header, at the commit before).
    expect(sha256Of(before)).toBe('decfc1d0664a315cf1daa8cbc242f7349b151766057798a8c0ab42509589472c');
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await reverse()).toBe(after);
  });

  it("RailReturnReference down gives wallet_reverse_transfer back without the return's reference, and up with it", async () => {
    const reverse = () => liveDefinition('wallet_reverse_transfer');
    const after = await reverse();
    expect(after).toContain("v_app := t.app_id; -- the application a return's reference is claimed under");
    expect(after).toContain('this reference was used for another return');
    await undoUntil('SmsPerUser1763902900000');
    const before = await reverse();
    expect(before).not.toContain('v_reused');
    // The definition ReversalLocksBeforeStates installed (its file's text below the header, at the commit before).
    expect(sha256Of(before)).toBe('b62d7f8fd2486fdcaa53204b318080999b860cc327478ea5e99e1cd377c73ea6');
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await reverse()).toBe(after);
  });

  it('ReturnsToClosedAccounts down gives wallet_reverse_transfer back (locks before the scope, a closed account refused) and drops unclaimed_returns, refused while it names a return; up again', async () => {
    const reverse = () => liveDefinition('wallet_reverse_transfer');
    const table = async () =>
      (
        await dataSource.query<{ t: string | null }[]>(`SELECT to_regclass('unclaimed_returns')::text AS t`)
      )[0].t;
    const after = await reverse();
    expect(after).toContain('INSERT INTO unclaimed_returns (transfer_id) VALUES (v_rd);');
    expect(after).toContain("ledger_system_account('UNCLAIMED_RETURNS', w.currency)");
    await undoUntil('ReturnsToClosedAccounts1763903200000');
    // A return held for a closed account: the row names it, and undoing would lose whose money it is. The rows
    // are the test's own (a transfer and its unclaimed row), written with the triggers off, as a replica applies
    // rows, and removed the same way.
    const transfer = randomUUID();
    const asReplica = (sql: string, params: unknown[]) =>
      dataSource.transaction(async (manager) => {
        await manager.query(`SET LOCAL session_replication_role = replica`);
        await manager.query(sql, params);
      });
    await asReplica(
      `INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name,
         counterparty_tax_id, counterparty_identifier_type, counterparty_identifier, amount, currency, concept)
       VALUES ($1, $2, $2, 'DEPOSIT', 'ACREDITADO', 'EXTERNAL', 'x', '20000000001', 'CBU', 'x', 1, 'ARS', 'VAR')`,
      [transfer, randomUUID()],
    );
    await asReplica(`INSERT INTO unclaimed_returns (transfer_id) VALUES ($1)`, [transfer]);
    try {
      await expect(dataSource.undoLastMigration({ transaction: 'each' })).rejects.toThrow(
        'unclaimed_returns names 1 returns to closed accounts',
      );
      expect((await appliedMigrations(dataSource)).at(-1)).toBe('ReturnsToClosedAccounts1763903200000');
    } finally {
      await asReplica(`DELETE FROM unclaimed_returns WHERE transfer_id = $1`, [transfer]);
      await asReplica(`DELETE FROM transfers WHERE id = $1`, [transfer]);
    }
    await dataSource.undoLastMigration({ transaction: 'each' });
    const before = await reverse();
    expect(before).not.toContain('unclaimed');
    expect(await table()).toBeNull();
    // The definition RailReturnReference installed (its file's text below the header, at the commit before).
    expect(sha256Of(before)).toBe('719642465d7dcd99fce01fbd34cda37628376d5f579e813b67cbffc73278e010');
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await reverse()).toBe(after);
    expect(await table()).toBe('unclaimed_returns');
  });

  it("LostCallAnswers down gives back the functions that made every new row's id themselves, and up the ones that take the request's", async () => {
    const definitions = () => definitionsOf(['wallet_create_transfers', 'wallet_reverse_transfer']);
    const after = await definitions();
    expect(after.map((row) => row.name)).toEqual(['wallet_create_transfers', 'wallet_reverse_transfer']);
    expect(calls(after, "(v_item->>'id')::uuid")).toEqual([1, 0]);
    expect(calls(after, "(p->>'id')::uuid")).toEqual([0, 2]);
    await undoUntil('WebhookAttemptUrls1763903400000');
    const before = await definitions();
    expect(calls(before, "->>'id')::uuid")).toEqual([0, 0]);
    // The definitions in effect at the commit before this migration: both files' texts as PostgreSQL prints them
    // once created (the last loaded by GroupReadsOnce and ReturnsToClosedAccounts).
    expect(before.map((row) => sha256Of(row.definition))).toEqual([
      'f0387bfe815b73ad29764e310570eb5e0d4d55cfbaf75fe412aa4ec43ce29b0c',
      'fa876b28c3c6ef6a576f801d8ba5d92d3b1be04840fdd68bd4c4806f573fd60a',
    ]);
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await definitions()).toEqual(after);
  });

  it("ReversalOwnerUnderLedgerLock down gives wallet_reverse_transfer back with the user's owner checked before the ledger lock, and up after it", async () => {
    const reverse = () => liveDefinition('wallet_reverse_transfer');
    const after = await reverse();
    expect(after).toContain('IF v_subject IS NOT NULL AND giver.owner_id <> v_subject THEN');
    expect(after).not.toContain('a.id = d.account_id AND a.owner_id = v_subject');
    await undoUntil('LostCallAnswers1763903500000');
    const before = await reverse();
    expect(before).toContain('a.id = d.account_id AND a.owner_id = v_subject');
    expect(before).not.toContain('giver.owner_id <> v_subject');
    // The definition LostCallAnswers installed: ReturnsToClosedAccounts' with the request's id taken.
    expect(
      sha256Of(
        before
          .replace(
            "CASE WHEN p->>'kind' = 'return' THEN uuidv7() ELSE coalesce((p->>'id')::uuid, uuidv7()) END",
            'uuidv7()',
          )
          .replace(
            "CASE WHEN p->>'kind' = 'return' THEN coalesce((p->>'id')::uuid, uuidv7()) ELSE uuidv7() END",
            'uuidv7()',
          ),
      ),
    ).toBe('fa876b28c3c6ef6a576f801d8ba5d92d3b1be04840fdd68bd4c4806f573fd60a');
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await reverse()).toBe(after);
  });

  it("ReversalEventsAfterTheOriginal down gives a reversal's events their own subject back, and up the original row's", async () => {
    const reverse = () => liveDefinition('wallet_reverse_transfer');
    const after = await reverse();
    expect(after).toContain("SELECT uuidv7(), x.app_id, 'transfer_update', x.reversal_of::text,");
    await undoUntil('ReversalOwnerUnderLedgerLock1763903600000');
    const before = await reverse();
    expect(before).toContain("SELECT uuidv7(), x.app_id, 'transfer_update', x.id::text,");
    expect(before).not.toContain('x.reversal_of::text');
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await reverse()).toBe(after);
  });

  it("PostingsInCheckOrder down gives back the group function that wrote every internal transfer at the group's end, and up the one that writes them before each hold", async () => {
    const create = () => liveDefinition('wallet_create_transfers');
    const after = await create();
    expect(calls([{ definition: after }], 'PERFORM wallet_write_internal(v_writes);')).toEqual([2]);
    await undoUntil('WebhookClaimForDelivery1763904100000');
    const before = await create();
    expect(calls([{ definition: before }], 'PERFORM wallet_write_internal(v_writes);')).toEqual([1]);
    expect(before).not.toContain("v_writes := '{}';");
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await create()).toBe(after);
  });

  it("LastAttemptRecorded down gives back the claim that set last_attempt_at and the record that did not, and up the record that sets it to the attempt's start (decision 0095)", async () => {
    const functions = () => definitionsOf(['webhook_claim_for_delivery', 'webhook_record']);
    const after = await functions();
    const setsAtClaim = (rows: { definition: string }[]) => calls(rows, 'last_attempt_at = now()');
    const setsAtRecord = (rows: { definition: string }[]) =>
      calls(rows, 'last_attempt_at = to_timestamp(i.started_ms / 1000)');
    expect(setsAtClaim(after)).toEqual([0, 0]);
    expect(setsAtRecord(after)).toEqual([0, 1]);
    await undoUntil('PostingsInCheckOrder1763904500000');
    const before = await functions();
    expect(setsAtClaim(before)).toEqual([1, 0]);
    expect(setsAtRecord(before)).toEqual([0, 0]);
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await functions()).toEqual(after);
  });

  it("PeriodOfCreatedAt down gives back the group function that counts each transfer in the month the request carries, and drops wallet_periods; up the one that takes the call's own period (decision 0098)", async () => {
    const create = () => liveDefinition('wallet_create_transfers');
    const periods = async () =>
      (
        await dataSource.query<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM pg_proc WHERE proname = 'wallet_periods'`,
        )
      )[0].n;
    const after = await create();
    expect(calls([{ definition: after }], 'FROM wallet_periods(')).toEqual([1]);
    expect(after).toContain("v_month := coalesce(v_item->>'month', v_now_month);");
    expect(await periods()).toBe(1);
    await undoUntil('LastAttemptRecorded1763905400000');
    const before = await create();
    expect(calls([{ definition: before }], 'FROM wallet_periods(')).toEqual([0]);
    expect(before).not.toContain('v_now_month');
    expect(before).toContain("v_month := v_item->>'month';");
    expect(await periods()).toBe(0);
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await create()).toBe(after);
    expect(await periods()).toBe(1);
  });

  it('WebhookEventsRoomToClaim fills the outbox to half (fillfactor 50); down gives the default back', async () => {
    const options = async () =>
      (
        await dataSource.query<{ options: string[] | null }[]>(
          `SELECT reloptions AS options FROM pg_class WHERE oid = 'webhook_events'::regclass`,
        )
      )[0].options;
    expect(await options()).toEqual(['fillfactor=50']);
    for (;;) {
      const applied = await appliedMigrations(dataSource);
      await dataSource.undoLastMigration({ transaction: 'each' });
      if (applied[applied.length - 1] === 'WebhookEventsRoomToClaim1763902100000') break;
    }
    expect(await options()).toBeNull();
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await options()).toEqual(['fillfactor=50']);
  });

  it('MoneyPathReferencesKept: down enforces the keys again (refused while a row names nothing), up unenforces them', async () => {
    const name = 'MoneyPathReferencesKept1763902200000';
    const state = async () => ({
      unenforced: (
        await dataSource.query<{ conname: string }[]>(
          `SELECT conname FROM pg_constraint WHERE contype = 'f' AND NOT conenforced ORDER BY conname`,
        )
      ).map((row) => row.conname),
      kept: (
        await dataSource.query<{ tgname: string }[]>(
          `SELECT tgname FROM pg_trigger WHERE tgname LIKE '%\\_kept' ORDER BY tgname`,
        )
      ).map((row) => row.tgname),
      ledgerPost: sha256Of(await liveDefinition('ledger_post')),
    });
    const after = await state();
    expect(after.unenforced).toEqual([
      'FK_operated_amounts_account',
      'FK_postings_account',
      'FK_postings_entry',
      'FK_transfers_account',
      'FK_webhook_events_app',
    ]);
    expect(after.kept).toEqual(['applications_kept', 'ledger_accounts_kept', 'wallet_accounts_kept']);
    for (;;) {
      const applied = await appliedMigrations(dataSource);
      if (applied[applied.length - 1] === name) break;
      await dataSource.undoLastMigration({ transaction: 'each' });
    }
    const ghost = randomUUID();
    await dataSource.query(
      `INSERT INTO operated_amounts (account_id, period, deposit, withdraw) VALUES ($1, 'M2026-01', 1, 0)`,
      [ghost],
    );
    await expect(dataSource.undoLastMigration({ transaction: 'each' })).rejects.toThrow(
      /FK_operated_amounts_account/,
    );
    expect((await appliedMigrations(dataSource)).at(-1)).toBe(name);
    await dataSource.query(`DELETE FROM operated_amounts WHERE account_id = $1`, [ghost]);
    await dataSource.undoLastMigration({ transaction: 'each' });
    // Every key enforced, no trigger, and ledger_post as it was before (without the accounts' lookup).
    expect(await state()).toEqual({
      unenforced: [],
      kept: [],
      ledgerPost: 'e8c4a49073748888e3f2013c8b63226a05aef6ad0ba0840e84c6bd56bc0592ea',
    });
    await dataSource.runMigrations({ transaction: 'each' });
    expect(await state()).toEqual(after);
  });

  it('stops at WalletBalanceNotNegative while a wallet balance is negative, naming it; applies once mended', async () => {
    const name = 'WalletBalanceNotNegative1763901800000';
    for (;;) {
      const applied = await appliedMigrations(dataSource);
      await dataSource.undoLastMigration({ transaction: 'each' });
      if (applied[applied.length - 1] === name) break;
    }
    const id = randomUUID();
    await dataSource.query(
      `INSERT INTO ledger_accounts (id, kind, code, currency, balance) VALUES ($1, 'WALLET', 'WALLET', 'ARS', -5)`,
      [id],
    );
    try {
      await expect(dataSource.runMigrations({ transaction: 'each' })).rejects.toThrow(
        `wallet accounts with a negative balance (the first 1): ${id} -5.000000`,
      );
      expect(await appliedMigrations(dataSource)).not.toContain(name);
      await dataSource.query(`UPDATE ledger_accounts SET balance = 0 WHERE id = $1`, [id]);
      await dataSource.runMigrations({ transaction: 'each' });
      await expect(appliedMigrations(dataSource)).resolves.toEqual(allMigrations);
    } finally {
      // Accounts are never deleted (ledger_parents_kept, decision 0046) but this one is the test's own: removed
      // with the triggers off, as a replica applies rows.
      await dataSource.transaction(async (manager) => {
        await manager.query(`SET LOCAL session_replication_role = replica`);
        await manager.query(`DELETE FROM ledger_accounts WHERE id = $1`, [id]);
      });
    }
  });

  /** An index's validity by name, or null when there is none. */
  const indexValid = async (name: string) =>
    (
      await dataSource.query<{ valid: boolean }[]>(
        `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`,
        [name],
      )
    )[0]?.valid ?? null;

  it("EventsAndAuditReads builds its indexes while the tables' writers go on (CONCURRENTLY, decision 0070)", async () => {
    await undoUntil('EventsAndAuditReads1763903300000');
    await dataSource.undoLastMigration({ transaction: 'each' });
    expect(await indexValid('idx_audit_records_at')).toBeNull();
    const writer = new pg.Client({ connectionString: database.url });
    const other = new pg.Client({ connectionString: database.url });
    await writer.connect();
    await other.connect();
    const append = (client: pg.Client, resource: string) =>
      client.query(
        `INSERT INTO audit_records (principal_type, principal, action, resource_type, resource_id, outcome)
         VALUES ('system', 'migrations test', 'test', 'test', $1, 'created')`,
        [resource],
      );
    try {
      // A transfer's transaction still open on the audit trail: the build waits for it, as it must.
      await writer.query('BEGIN');
      await append(writer, 'open');
      const migrating = dataSource.runMigrations({ transaction: 'each' });
      const waiting = async () =>
        (
          await other.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE query ~ 'CREATE (UNIQUE )?INDEX.*idx_audit_records_at' AND wait_event_type = 'Lock'`,
          )
        ).rows[0].n === 1;
      while (!(await waiting())) await new Promise((resolve) => setTimeout(resolve, 20));
      // Meanwhile another writer is not held: a plain CREATE INDEX would queue it behind the build's lock.
      await other.query(`SET lock_timeout = '10s'`);
      await expect(append(other, 'meanwhile')).resolves.toMatchObject({ rowCount: 1 });
      await writer.query('COMMIT');
      await migrating;
      await expect(appliedMigrations(dataSource)).resolves.toEqual(allMigrations);
      for (const name of [
        'idx_audit_records_at',
        'idx_webhook_events_app_event_created',
        'idx_webhook_events_created',
      ]) {
        expect({ name, valid: await indexValid(name) }).toEqual({ name, valid: true });
      }
      expect(await indexValid('idx_webhook_events_app_created')).toBeNull();
      await expectNoDrift();
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      await writer.end();
      await other.end();
    }
  });

  it("two migration runs at once: the second waits its turn without a snapshot the first run's concurrent build would wait for (decision 0070)", async () => {
    await undoUntil('EventsAndAuditReads1763903300000');
    await dataSource.undoLastMigration({ transaction: 'each' });
    const writer = new pg.Client({ connectionString: database.url });
    const monitor = new pg.Client({ connectionString: database.url });
    const second = new DataSource(dataSourceOptions(database.url, 2, 'drift-second'));
    await writer.connect();
    await monitor.connect();
    await second.initialize();
    const seen = async (sql: string) => (await monitor.query<{ n: number }>(sql)).rows[0].n;
    const until = async (sql: string, n: number) => {
      while ((await seen(sql)) !== n) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    let first: Promise<string[]> | undefined;
    let other: Promise<string[]> | undefined;
    try {
      // The first run's build of the audit index waits for a transaction open on audit_records...
      await writer.query('BEGIN');
      await writer.query(
        `INSERT INTO audit_records (principal_type, principal, action, resource_type, resource_id, outcome)
         VALUES ('system', 'migrations test', 'test', 'test', 'open', 'created')`,
      );
      first = migrateWithLock(dataSource, database.url);
      await until(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE query ~ 'CREATE INDEX CONCURRENTLY "idx_audit_records_at"' AND wait_event_type = 'Lock'`,
        1,
      );
      // ...while a second run asks for the migration lock.
      other = migrateWithLock(second, database.url);
      await until(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE application_name = 'wallet-migrate-lock' AND query ~ 'advisory_lock'`,
        2,
      );
      await writer.query('COMMIT');
      const outcome = await Promise.race([
        Promise.all([first, other]),
        new Promise<'stuck'>((resolve) => setTimeout(resolve, 30_000, 'stuck')),
      ]);
      expect(outcome).toEqual([
        allMigrations.slice(allMigrations.indexOf('EventsAndAuditReads1763903300000')),
        [],
      ]);
      await expect(appliedMigrations(dataSource)).resolves.toEqual(allMigrations);
      expect(await indexValid('idx_audit_records_at')).toBe(true);
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      // Stuck (the earlier lock wait): end the waiting lock sessions so that both runs finish.
      await monitor.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'wallet-migrate-lock'`,
      );
      await Promise.allSettled([first, other]);
      await dataSource.runMigrations({ transaction: 'each' });
      await second.destroy();
      await writer.end();
      await monitor.end();
    }
  }, 60_000);

  it("createIndexConcurrently's build is not cut by the session's statement timeout, which holds again afterwards", async () => {
    const short = new DataSource(dataSourceOptions(database.url, 1, 'drift-short', 200));
    await short.initialize();
    const writer = new pg.Client({ connectionString: database.url });
    await writer.connect();
    await dataSource.query(`CREATE TABLE concurrent_timeout_test (x int)`);
    try {
      await writer.query('BEGIN');
      await writer.query(`INSERT INTO concurrent_timeout_test VALUES (1)`);
      const runner = short.createQueryRunner();
      const building = createIndexConcurrently(
        (sql, params) => runner.query(sql, params),
        'concurrent_timeout_test_x',
        'ON concurrent_timeout_test (x)',
      );
      // The build waits for the open writer well past the session's 200 ms.
      const waitedLong = async () =>
        (
          await dataSource.query<{ n: number }[]>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE query ~ 'concurrent_timeout_test_x' AND wait_event_type = 'Lock'
                AND now() - query_start > interval '600 milliseconds'`,
          )
        )[0].n === 1;
      while (!(await waitedLong())) await new Promise((resolve) => setTimeout(resolve, 20));
      await writer.query('COMMIT');
      await expect(building).resolves.toBeUndefined();
      expect(await indexValid('concurrent_timeout_test_x')).toBe(true);
      expect(await runner.query(`SHOW statement_timeout`)).toEqual([{ statement_timeout: '200ms' }]);
      await runner.release();
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      await writer.end();
      await short.destroy();
      await dataSource.query(`DROP TABLE concurrent_timeout_test`);
    }
  });

  it('createIndexConcurrently keeps a valid index and builds again one an interrupted build left invalid', async () => {
    const query = (sql: string, params?: unknown[]) => dataSource.query(sql, params);
    await query(`CREATE TABLE concurrent_index_test (x int)`);
    try {
      await query(`INSERT INTO concurrent_index_test VALUES (1), (1)`);
      // A unique build that fails on duplicates leaves its index behind, invalid (as a build cut off would).
      await expect(
        query(`CREATE UNIQUE INDEX CONCURRENTLY "concurrent_index_test_x" ON concurrent_index_test (x)`),
      ).rejects.toThrow(/could not create unique index/);
      expect(await indexValid('concurrent_index_test_x')).toBe(false);
      await query(`DELETE FROM concurrent_index_test`);
      await createIndexConcurrently(query, 'concurrent_index_test_x', 'ON concurrent_index_test (x)', {
        unique: true,
      });
      expect(await indexValid('concurrent_index_test_x')).toBe(true);
      const oid = async () =>
        (await query(`SELECT 'concurrent_index_test_x'::regclass::oid AS oid`))[0].oid as number;
      const built = await oid();
      await createIndexConcurrently(query, 'concurrent_index_test_x', 'ON concurrent_index_test (x)', {
        unique: true,
      });
      expect(await oid()).toBe(built);
      await expect(query(`INSERT INTO concurrent_index_test VALUES (2), (2)`)).rejects.toThrow(
        /duplicate key/,
      );
    } finally {
      await query(`DROP TABLE concurrent_index_test`);
    }
  });
});

/**
 * TypeORM's own executor, as `runMigrations` uses it (`transaction: 'each'`, and a migration's `transaction =
 * false` honoured), knowing only the first `count` migrations: it applies those of them still pending, so one
 * DataSource applies the migrations one at a time.
 */
class FirstMigrations extends MigrationExecutor {
  constructor(
    dataSource: DataSource,
    private readonly count: number,
  ) {
    super(dataSource);
    this.transaction = 'each';
  }

  protected override getMigrations() {
    return super.getMigrations().slice(0, this.count);
  }
}

/** What loadFunction hands a migration (migrations/sql.ts): its first line, and the next when it installs nothing. */
const LOAD = /^-- loadFunction (\w+) sha256:\S+\n(-- changed or removed since)?/;

describe('every migration down to none and up again', () => {
  const names = MIGRATIONS.map((migration) => new migration().name);
  let database: { url: string; drop: () => Promise<void> };
  let dataSource: DataSource;
  /** What loadFunction handed the migrations since the last `loads.length = 0`: each function, and if installed. */
  const loads: { name: string; installed: boolean }[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const record: Logger = {
      logQuery(query) {
        const load = LOAD.exec(query);
        if (load) loads.push({ name: load[1], installed: load[2] === undefined });
      },
      logQueryError: () => undefined,
      logQuerySlow: () => undefined,
      logSchemaBuild: () => undefined,
      logMigration: () => undefined,
      log: () => undefined,
    };
    dataSource = new DataSource({ ...dataSourceOptions(database.url, 2, 'round-trip'), logger: record });
    await dataSource.initialize();
  });
  afterAll(async () => {
    if (dataSource?.isInitialized) await dataSource.destroy();
    await database?.drop();
  });

  const snapshot = async () => schemaSnapshot((sql) => dataSource.query(sql));
  /** The schema of a database no migration ran on: TypeORM's table of applied migrations alone. */
  const nothingApplied = async () => {
    const empty = await createEmptyDatabase();
    const bare = new DataSource({ ...dataSourceOptions(empty.url, 1, 'round-trip-empty'), migrations: [] });
    await bare.initialize();
    try {
      await bare.runMigrations({ transaction: 'each' });
      return await schemaSnapshot((sql) => bare.query(sql));
    } finally {
      await bare.destroy();
      await empty.drop();
    }
  };

  it('undoes every migration down to none, each down succeeding, then applies them one at a time: with k applied, the schema reached from below is the one reached from above, for every k; the round trip ends where it started', async () => {
    const n = names.length;
    await expect(appliedMigrations(dataSource)).resolves.toEqual(names);

    // From above: the schema with k migrations applied, each down undoing the last.
    const above: SchemaFact[][] = [];
    above[n] = await snapshot();
    for (let k = n; k > 0; k--) {
      try {
        await dataSource.undoLastMigration({ transaction: 'each' });
      } catch (error) {
        throw new Error(`${names[k - 1]}'s down failed: ${(error as Error).message}`, { cause: error });
      }
      expect(await appliedMigrations(dataSource)).toEqual(names.slice(0, k - 1));
      above[k - 1] = await snapshot();
    }
    // The downs leave nothing behind.
    expect(above[0].map(factLine)).toEqual((await nothingApplied()).map(factLine));

    // From below, one migration at a time. A migration whose loadFunction pins a text its function's file no
    // longer has installs nothing (src/modules/transfers/sql/README.md): on the way up that function keeps its
    // older text, or is not there yet, where the way down gives back the text the migration installed when it
    // landed. Such a function is left out of the comparison from that migration until a later one installs it
    // (the last loader of each file pins its text now: migrations-function-files) or drops it both ways.
    // Everything else is compared at every step.
    const unsettled = new Set<string>();
    const differences: { k: number; onlyAbove: string[]; onlyBelow: string[] }[] = [];
    for (let k = 1; k <= n; k++) {
      loads.length = 0;
      let applied: string[];
      try {
        applied = (await new FirstMigrations(dataSource, k).executePendingMigrations()).map((m) => m.name);
      } catch (error) {
        throw new Error(`${names[k - 1]}'s up failed: ${(error as Error).message}`, { cause: error });
      }
      expect(applied).toEqual([names[k - 1]]);
      for (const load of loads) {
        if (load.installed) unsettled.delete(`public.${load.name}`);
        else unsettled.add(`public.${load.name}`);
      }
      const below = await snapshot();
      const compared = (facts: SchemaFact[]) =>
        facts.filter((fact) => !fact.kind.startsWith('function') || !unsettled.has(fact.name)).map(factLine);
      const { onlyA, onlyB } = schemaDifferences(compared(above[k]), compared(below));
      if (onlyA.length > 0 || onlyB.length > 0) differences.push({ k, onlyAbove: onlyA, onlyBelow: onlyB });
      // A function dropped on both ways (with its file) is settled: gone.
      const present = new Set(
        [...above[k], ...below].filter((f) => f.kind === 'function').map((f) => f.name),
      );
      for (const name of unsettled) if (!present.has(name)) unsettled.delete(name);
    }
    expect(await appliedMigrations(dataSource)).toEqual(names);

    if (differences.length > 0) {
      // Reached from above, k migrations applied is the down of migration k+1 after its up (k+1 matched): the
      // highest k that differs names the migration whose down does not give back the schema its up started from.
      const highest = differences[differences.length - 1].k;
      const culprit =
        highest === n
          ? 'the migrations applied one at a time from nothing do not give the schema the test database started with'
          : `${names[highest]}'s down does not give back the schema its up started from`;
      throw new Error(
        [
          `${culprit}. The schema with k migrations applied, reached from above (downs) and from below (ups):`,
          ...differences.map(({ k, onlyAbove, onlyBelow }) =>
            [
              `k = ${k} (up to ${names[k - 1]}):`,
              ...onlyAbove.map((line) => `  only from above: ${line}`),
              ...onlyBelow.map((line) => `  only from below: ${line}`),
            ].join('\n'),
          ),
        ].join('\n'),
      );
    }
    // Every function that a migration on the way up left as it was has been installed since, or dropped.
    expect(unsettled).toEqual(new Set());
    // The round trip ends where it started, function texts included.
    expect((await snapshot()).map(factLine)).toEqual(above[n].map(factLine));
  }, 120_000);
});
