// The bare-ledger reference (issue 19's yardstick): the smallest double-entry ledger that is still a ledger, as
// one PL/pgSQL function per transfer. One transfer row, two entries, two balance updates (5 rows, against the
// service's 11), the two accounts locked in id order, a balance that may not go negative (CHECK), an entries index
// for statements, foreign keys. No idempotency, limits, fees, taxes, statuses, events, audit, tenants or group
// commit. It is measured over SQL (pgbench with BARE_LEDGER_SCRIPT, the same client as the tpcb-like reference)
// and behind a bare Node.js HTTP server (bench/bare-ledger.mjs), the floor of any HTTP service on this ledger.

/** Funded accounts of the reference (ids 1..n), each with far more than a run can move. */
export const BARE_LEDGER_ACCOUNTS = 1000;

export const BARE_LEDGER_SCHEMA = `
CREATE TABLE accounts (
  id integer PRIMARY KEY,
  balance numeric(20, 2) NOT NULL CHECK (balance >= 0)
);
CREATE TABLE transfers (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  from_account integer NOT NULL REFERENCES accounts,
  to_account integer NOT NULL REFERENCES accounts,
  amount numeric(20, 2) NOT NULL CHECK (amount > 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE entries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transfer_id bigint NOT NULL REFERENCES transfers,
  account_id integer NOT NULL REFERENCES accounts,
  amount numeric(20, 2) NOT NULL
);
CREATE INDEX entries_account ON entries (account_id, id);
CREATE FUNCTION bare_transfer(p_from integer, p_to integer, p_amount numeric) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  created bigint;
BEGIN
  PERFORM 1 FROM accounts WHERE id IN (p_from, p_to) ORDER BY id FOR UPDATE;
  UPDATE accounts SET balance = balance - p_amount WHERE id = p_from;
  UPDATE accounts SET balance = balance + p_amount WHERE id = p_to;
  INSERT INTO transfers (from_account, to_account, amount) VALUES (p_from, p_to, p_amount)
    RETURNING id INTO created;
  INSERT INTO entries (transfer_id, account_id, amount)
    VALUES (created, p_from, -p_amount), (created, p_to, p_amount);
  RETURN created;
END
$$;
INSERT INTO accounts (id, balance) SELECT n, 1000000000 FROM generate_series(1, ${BARE_LEDGER_ACCOUNTS}) AS n;
`;

/**
 * A ledger in use before it is measured: BARE_LEDGER_PREFILL transfers, then (by the caller) VACUUM ANALYZE. On
 * empty tables each new connection would plan the foreign keys' checks of transfers as sequential scans and keep
 * those plans while the table grows (a first measured run read 1,000 µs of PostgreSQL CPU per transfer against
 * 440 in the next ones).
 */
export const BARE_LEDGER_PREFILL = `
SELECT count(bare_transfer(f, t, 1))
  FROM (SELECT 1 + n % ${BARE_LEDGER_ACCOUNTS} AS f,
               1 + (n + 1 + (n / ${BARE_LEDGER_ACCOUNTS}) % ${BARE_LEDGER_ACCOUNTS - 1}) % ${BARE_LEDGER_ACCOUNTS} AS t
          FROM generate_series(1, 20000) AS n) AS pairs
 WHERE f <> t`;

/** pgbench's script: a random pair of distinct accounts, 1.00 to 9.99 (as the service's transfer phases). */
export const BARE_LEDGER_SCRIPT = `\\set from random(1, ${BARE_LEDGER_ACCOUNTS})
\\set to 1 + (:from - 1 + random(1, ${BARE_LEDGER_ACCOUNTS - 1})) % ${BARE_LEDGER_ACCOUNTS}
\\set cents random(100, 999)
SELECT bare_transfer(:from, :to, :cents::numeric / 100);
`;

/** Money is conserved: the balances' sum, and every transfer's two entries summing to zero. */
export const BARE_LEDGER_CHECK = `
SELECT (SELECT sum(balance) FROM accounts)::text AS total,
       (SELECT count(*) FROM transfers)::int AS transfers,
       (SELECT count(*) FROM (SELECT transfer_id FROM entries GROUP BY transfer_id
                              HAVING sum(amount) <> 0 OR count(*) <> 2) AS bad)::int AS unbalanced`;
