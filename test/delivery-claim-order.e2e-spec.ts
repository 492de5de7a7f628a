import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Rng } from './support/bank.js';
import { createTestDatabase } from './support/database.js';

/**
 * The delivery worker's claim (src/modules/webhooks/sql/webhook_claim_for_delivery.sql; webhook_claim, kept for
 * workers from before decision 0076, only calls it) under concurrent batches with ids in common, in any order:
 * each locks the events it may change in id order first, so they wait for one another and never deadlock
 * (docs/decisions/0044-webhook-claim-lock-order.md). Before that, this workload deadlocked in about a third of
 * its calls; in CI, the scale-out test's hot-account run counted one.
 */
describe('webhook_claim_for_delivery: concurrent overlapping batches', () => {
  const CLIENTS = 8;
  const CALLS = 40; // per client
  const EVENTS = 400;
  const SUBJECTS = 40; // ten events each: the first of each is claimed, the others parked
  let database: { url: string; drop: () => Promise<void> };
  const clients: pg.Client[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    for (let n = 0; n < CLIENTS + 1; n++) {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      clients.push(client);
    }
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.end()));
    await database?.drop();
  });

  it('claims and parks from every batch, with no deadlock', async () => {
    const [admin, ...workers] = clients;
    const app = randomUUID();
    await admin.query(`INSERT INTO applications (id, name) VALUES ($1, 'claim order')`, [app]);
    const ids = Array.from({ length: EVENTS }, () => randomUUID());
    await admin.query(
      `INSERT INTO webhook_events (id, app_id, event, subject, payload, next_attempt_at)
       SELECT id, $2, 'transfer.update', 'subject-' || (n % $3), '{}', now() - interval '1 second'
         FROM unnest($1::uuid[]) WITH ORDINALITY AS t(id, n)`,
      [ids, app, SUBJECTS],
    );
    // A short deadlock timeout makes each cycle cost 10 ms instead of a second (allowed to a superuser, which
    // the embedded server's user is; elsewhere the default only makes a regression slower to show).
    const superuser =
      (await admin.query<{ on: string }>(`SELECT current_setting('is_superuser') AS on`)).rows[0].on === 'on';
    const rng = new Rng(20261127);
    let deadlocks = 0;
    let claimed = 0;
    let calls = 0;
    await Promise.all(
      workers.map(async (client) => {
        for (let call = 0; call < CALLS; call++) {
          // About a third of the events, shuffled: every pair of batches has ids in common, in other orders.
          const batch = ids.filter(() => rng.chance(0.3));
          for (let i = batch.length - 1; i > 0; i--) {
            const j = rng.int(0, i);
            [batch[i], batch[j]] = [batch[j], batch[i]];
          }
          await client.query('BEGIN');
          if (superuser) await client.query(`SET LOCAL deadlock_timeout = '10ms'`);
          try {
            const { rows } = await client.query<{ id: string }>(
              'SELECT * FROM webhook_claim_for_delivery($1, 30000)',
              [batch.join(',')],
            );
            claimed += rows.length;
            calls++;
          } catch (error) {
            if ((error as { code?: string }).code !== '40P01') throw error;
            deadlocks++;
          } finally {
            // Rolled back: every batch meets the same pending events, and the same locks.
            await client.query('ROLLBACK');
          }
        }
      }),
    );
    expect(deadlocks).toBe(0);
    expect(calls).toBe(CLIENTS * CALLS);
    // Each batch claimed the first events of the subjects it held (about a third of 40), not nothing.
    expect(claimed).toBeGreaterThan(CLIENTS * CALLS * 5);
    const [untouched] = (
      await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_events WHERE app_id = $1 AND lease_until IS NULL AND attempts = 0`,
        [app],
      )
    ).rows;
    expect(untouched.n).toBe(EVENTS);
  }, 60_000);
});

describe('webhook_claim_for_delivery: in place', () => {
  // A database of its own: the pages of a fresh outbox, not those the batches above left their versions on.
  let database: { url: string; drop: () => Promise<void> };
  let client: pg.Client;

  beforeAll(async () => {
    database = await createTestDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  it('claims each event in place: a HOT update, no new index entry (the outbox is filled to half)', async () => {
    const app = randomUUID();
    await client.query(`INSERT INTO applications (id, name) VALUES ($1, 'claim in place')`, [app]);
    await client.query('BEGIN');
    try {
      // Events as a transfer writes them (a payload of about 200 bytes), each of its own subject: all claimed.
      const { rows } = await client.query<{ id: string }>(
        `INSERT INTO webhook_events (id, app_id, event, subject, payload, next_attempt_at)
         SELECT gen_random_uuid(), $1, 'transfer_update', s.subject,
                jsonb_build_object('event', 'transfer_update', 'timestamp', 1795780000,
                  'data', jsonb_build_object('uuid', s.subject, 'movementType', 'TRANSFER',
                    'backStatus', 'PENDING', 'newStatus', 'ACCEPTED')), now()
           FROM (SELECT gen_random_uuid()::text AS subject FROM generate_series(1, 500)) s
         RETURNING id`,
        [app],
      );
      const claimed = await client.query('SELECT * FROM webhook_claim_for_delivery($1, 30000)', [
        rows.map((row) => row.id).join(','),
      ]);
      expect(claimed.rowCount).toBe(500);
      // This transaction's own counts (pg_stat_xact_*: no statistics lag).
      const [counts] = (
        await client.query<{ updated: number; hot: number }>(
          `SELECT n_tup_upd::int AS updated, n_tup_hot_upd::int AS hot
             FROM pg_stat_xact_user_tables WHERE relname = 'webhook_events'`,
        )
      ).rows;
      expect(counts).toEqual({ updated: 500, hot: 500 });
    } finally {
      await client.query('ROLLBACK');
    }
  });
});

/**
 * The claim's commit does not wait for the WAL flush (docs/decisions/0051-webhook-claim-without-flush-wait.md):
 * its transaction, and only its, runs with synchronous_commit off; a claim a server crash forgets costs a second
 * delivery, never a lost one.
 */
describe('webhook_claim_for_delivery: its commit does not wait for the flush', () => {
  let database: { url: string; drop: () => Promise<void> };
  let client: pg.Client;
  let app: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    app = randomUUID();
    await client.query(
      `INSERT INTO applications (id, name, webhook_url) VALUES ($1, 'claim', 'https://example.test/hook')`,
      [app],
    );
  });
  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  async function pendingEvent(): Promise<string> {
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO webhook_events (id, app_id, event, subject, payload, next_attempt_at)
       VALUES (gen_random_uuid(), $1, 'transfer_update', gen_random_uuid()::text, '{}'::jsonb, now()) RETURNING id`,
      [app],
    );
    return rows[0].id;
  }

  async function setting(): Promise<string> {
    return (await client.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`)).rows[0].s;
  }

  it('turns synchronous_commit off for the transaction it runs in, and the session keeps its own', async () => {
    expect(await setting()).toBe('on');
    await client.query('BEGIN');
    try {
      const claimed = await client.query('SELECT * FROM webhook_claim_for_delivery($1, 30000)', [
        await pendingEvent(),
      ]);
      expect(claimed.rowCount).toBe(1);
      expect(await setting()).toBe('off');
    } finally {
      await client.query('ROLLBACK');
    }
    expect(await setting()).toBe('on');
    // Alone, as the worker calls it: committed (another session sees the lease), and the session is unchanged.
    const id = await pendingEvent();
    await client.query('SELECT * FROM webhook_claim_for_delivery($1, 30000)', [id]);
    expect(await setting()).toBe('on');
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      const { rows } = await other.query<{ leased: boolean; attempts: number }>(
        `SELECT lease_until > now() AS leased, attempts FROM webhook_events WHERE id = $1`,
        [id],
      );
      expect(rows).toEqual([{ leased: true, attempts: 1 }]);
    } finally {
      await other.end();
    }
  });

  it('a claim forgotten by a crash: the attempt is recorded, the event stays pending and is claimed again', async () => {
    const id = await pendingEvent();
    await client.query('SELECT * FROM webhook_claim_for_delivery($1, 30000)', [id]);
    // What the server finds after a crash that lost the claim's commit: the event as it was before the claim.
    await client.query(
      `UPDATE webhook_events SET lease_until = NULL, attempts = 0, last_attempt_at = NULL WHERE id = $1`,
      [id],
    );
    // The worker had POSTed (delivered) and records attempt 1.
    const attempt = {
      id,
      attempt: 1,
      url: 'https://example.test/hook',
      started_ms: Date.now(),
      duration_ms: 3,
      status_code: 200,
      outcome: 'delivered',
      error: null,
      retry_delay_ms: null,
    };
    await client.query('SELECT * FROM webhook_record($1)', [JSON.stringify([attempt])]);
    const after = await client.query<{ status: string; attempts: number; recorded: number }>(
      `SELECT e.status, e.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.event_id = e.id) AS recorded
         FROM webhook_events e WHERE e.id = $1`,
      [id],
    );
    expect(after.rows).toEqual([{ status: 'pending', attempts: 0, recorded: 1 }]);
    // Due again: the sweeper's claim (or any) takes it as attempt 1, and its record says delivered.
    const again = await client.query<{ attempts: number }>(
      'SELECT * FROM webhook_claim_for_delivery($1, 30000)',
      [id],
    );
    expect(again.rows.map((row) => row.attempts)).toEqual([1]);
    await client.query('SELECT * FROM webhook_record($1)', [
      JSON.stringify([{ ...attempt, started_ms: attempt.started_ms + 1000 }]),
    ]);
    const done = await client.query<{ status: string; recorded: number }>(
      `SELECT e.status, (SELECT count(*)::int FROM webhook_attempts a WHERE a.event_id = e.id) AS recorded
         FROM webhook_events e WHERE e.id = $1`,
      [id],
    );
    expect(done.rows).toEqual([{ status: 'delivered', recorded: 2 }]);
  });
});
