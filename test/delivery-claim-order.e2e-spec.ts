import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Rng } from './support/bank.js';
import { createTestDatabase } from './support/database.js';

/**
 * The delivery worker's claim (src/modules/webhooks/sql/webhook_claim.sql) under concurrent batches with ids in
 * common, in any order: each locks the events it may change in id order first, so they wait for one another and
 * never deadlock (docs/decisions/0044-webhook-claim-lock-order.md). Before that, this workload deadlocked in
 * about a third of its calls; in CI, the scale-out test's hot-account run counted one.
 */
describe('webhook_claim: concurrent overlapping batches', () => {
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
            const { rows } = await client.query<{ id: string }>('SELECT * FROM webhook_claim($1, 30000)', [
              batch.join(','),
            ]);
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

describe('webhook_claim: in place', () => {
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
      const claimed = await client.query('SELECT * FROM webhook_claim($1, 30000)', [
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
