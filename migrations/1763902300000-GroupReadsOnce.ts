import type { MigrationInterface, QueryRunner } from 'typeorm';
import { loadFunction } from './sql.js';

/**
 * Functions whose header named wallet_transfer_try: their text is loaded again (the same definitions, pinned at the
 * files' new text), so each file stays the last loaded copy of its function.
 */
const HEADERS_ONLY = [
  ['wallet_add_operated', '1e9e33af2060cd72714bc665c9db3551c705d72fc9dec6d1b91c614886c8ba03'],
  ['wallet_check_limits', '881a7d5f949c6feee1ee4a808feeb9f14440322bb70a52887f4ce78e74c62645'],
  ['ledger_post', 'b86b847e862413f7e3df9b82e7803e5fcdc84a73f504fbaa4d03abba4b3e03dd'],
  ['wallet_key_answer', '49299c3723ed6511f419028380f024c74638eec46ff8825e8b6d0f0e9c1aef11'],
  ['wallet_write_internal', '760b891768057c50ed68e08c2462e91d0aacbde411e7133f0c9c5d8bad1595e0'],
  ['wallet_reverse_transfer', '70f157ca0ce16b8fee29813df8bc15413d85fc9046760b1cc4f951de32bb5ef8'],
] as const;

/**
 * A group's accounts are read once, not once per transfer (docs/decisions/0047-group-reads-once.md).
 * `wallet_create_transfers` locks the group's ledger rows in id order as before, then reads every account of the
 * group in one statement, with its balance, the month's and the year's operated amounts and what it has in flight
 * (type `wallet_group_account`), and checks each transfer against those plus what the group's earlier transfers
 * moved, in PL/pgSQL arithmetic. Before, `wallet_transfer_try` ran three or four statements per transfer (the
 * receiver by CVU, the sender with its owner, the ledger rows, the limits), each paying its executor's start-up;
 * now a transfer runs one (its Idempotency-Key) besides what it writes. `wallet_transfer_try` is gone (its body
 * is the group's loop) and so is `wallet_create_transfer`: a single request is a group of one.
 */
export class GroupReadsOnce1763902300000 implements MigrationInterface {
  name = 'GroupReadsOnce1763902300000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TYPE "wallet_group_account" AS (
        id uuid, app_id uuid, owner_id uuid, owner_type text, status text, currency text, cvu text, fee_type text,
        fee_amount numeric, monthly_withdraw_limit numeric, annual_withdraw_limit numeric,
        monthly_deposit_limit numeric, annual_deposit_limit numeric, owner_name text, owner_tax_id text,
        owner_tax_id_type text, balance numeric, month_withdraw numeric, month_deposit numeric,
        year_withdraw numeric, year_deposit numeric, in_flight_withdraw numeric, in_flight_deposit numeric
      )`);
    await queryRunner.query(
      loadFunction(
        'wallet_create_transfers',
        'dc0e4c60787fff70da36243f933956cc4c3b7ec4293f984035faba2eb5db6017',
      ),
    );
    for (const [name, sha256] of HEADERS_ONLY) await queryRunner.query(loadFunction(name, sha256));
    // IF EXISTS: a database migrated from nothing since the files were removed may not have these (a migration
    // whose file is gone installs nothing, loadFunction); one migrated before has them.
    await queryRunner.query(
      `DROP FUNCTION IF EXISTS "wallet_transfer_try"(jsonb, uuid[], boolean, uuid[], numeric[])`,
    );
    // The single call is a group of one: TransferWriter sends every request to wallet_create_transfers.
    await queryRunner.query(`DROP FUNCTION IF EXISTS "wallet_create_transfer"(jsonb)`);
  }

  /**
   * The three functions as they were (their files at the commit before this one), the type dropped. The
   * functions of HEADERS_ONLY stay: only their files' headers changed.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(TRANSFER_TRY_BEFORE);
    await queryRunner.query(CREATE_TRANSFERS_BEFORE);
    await queryRunner.query(CREATE_TRANSFER_BEFORE);
    await queryRunner.query(`DROP TYPE "wallet_group_account"`);
  }
}

const TRANSFER_TRY_BEFORE = `-- One transfer of POST /wallet/transactions, checked and applied: the request p is a TransferRequest
-- (src/modules/transfers/transfer-function.contract.ts). result is {row, submit} (a new transfer),
-- {replay} (its Idempotency-Key's stored answer) or {refused} (code, path, type, message); write holds an
-- internal transfer's rows for wallet_write_internal. New ids (the transfer, an internal one's DEPOSIT and its
-- journal entry) are time-ordered, uuidv7(): each lands on its primary key's rightmost leaf (decision 0042).
-- Guarantees:
-- - routing: a live CVU of this service makes the transfer INTERNAL (settled here, ACREDITADO on both sides),
--   anything else EXTERNAL (INICIADO, money held, submitted to the clearing rail after commit: submit true);
-- - every check that can refuse (account in scope of the application and, for a user token, its owner; state;
--   decimals and minimum for the currency; the counterparty; funds for amount + fee + tax; the monthly and
--   annual limits of both sides, in flight included) runs before the first write: a refusal writes nothing
--   and is returned, not raised;
-- - the ledger rows are locked in id order (or were, by the group: p_locked), so transfers never deadlock on
--   them and two transfers cannot spend the same money;
-- - the Idempotency-Key is claimed with its answer in one INSERT … ON CONFLICT DO NOTHING, which waits for a
--   twin in flight; an already used key wins over a refusal; a different body under the same key is refused;
-- - operated amounts are kept per month only (the sender's withdrawals, the receiver's deposits); a year's is the
--   sum of its months' rows (decision 0035);
-- - an internal transfer moves both balances and both operated amounts here (single call), or leaves them to a
--   group given p_group_ids and p_group_sums (what the group's earlier internal transfers moved, per account:
--   balance, withdrawals, deposits of the month), which this function adds to what it reads for every check;
--   it writes its entry,
--   postings, two transfer rows and the receiver's webhook event through wallet_write_internal: here (p_write
--   true) or once per group (p_write false, rows in write);
-- - an external WITHDRAW holds amount + fee + tax (ledger_post to HOLDS); the transfer row and its
--   audit record (audit_append, with p's requestId and route) are written here; an internal transfer's audit
--   record is written by wallet_write_internal; a refusal or a replay writes none (decision 0032);
-- - no history row for the creation: COMMITING → the first status is implied by the transfer row (the view
--   transfer_status_path, decision 0035); later clearing steps add their rows (TransferWriter.moveStatus).
-- wallet_create_transfer and wallet_create_transfers are the only callers.
CREATE OR REPLACE FUNCTION public.wallet_transfer_try(p jsonb, p_locked uuid[] DEFAULT NULL::uuid[], p_write boolean DEFAULT true, p_group_ids uuid[] DEFAULT NULL::uuid[], p_group_sums numeric[] DEFAULT NULL::numeric[], OUT result jsonb, OUT write wallet_internal_write)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_app uuid := (p->>'appId')::uuid;
  v_key text := p->>'idempotencyKey';
  v_hash text := p->>'requestHash';
  v_amount numeric := (p->>'amount')::numeric;
  v_movement text := p->>'movementType';
  v_cp jsonb := p->'counterparty';
  v_month text := p->>'month';
  v_year_first text := 'M' || substr(p->>'year', 2) || '-01'; -- the year's months, whose rows add up to it
  v_year_last text := 'M' || substr(p->>'year', 2) || '-12';
  v_id uuid := uuidv7();
  v_deposit uuid;
  v_internal boolean;
  v_units integer;
  v_fee numeric;
  v_tax numeric;
  v_total numeric;
  v_balance numeric;
  v_side text;
  v_monthly numeric;
  v_annual numeric;
  v_month_used numeric;
  v_year_used numeric;
  v_used numeric;
  v_in_flight numeric;
  v_recv_month_used numeric;
  v_recv_year_used numeric;
  v_recv_in_flight numeric;
  v_fee_account uuid;
  v_tax_account uuid;
  v_created timestamptz;
  v_status text;
  v_route text;
  v_row jsonb;
  v_refusal jsonb;
  v_error text;
  v_unanswered boolean := false;
  v_answer jsonb;
  acc record;
  recv record;
BEGIN
  SELECT w.id, w.app_id, w.owner_id, w.status, w.currency, w.monthly_deposit_limit, w.annual_deposit_limit
    INTO recv FROM wallet_accounts w WHERE w.cvu = v_cp->>'identifier' AND w.status <> 'DELETED';
  v_internal := FOUND;
  IF v_internal AND v_movement = 'DEPOSIT' THEN
    result := jsonb_build_object('refused', jsonb_build_object('code', 'WT400', 'path', 'movementType', 'type', 'invalid',
      'message', 'money from an account of this service comes as its WITHDRAW, not as a DEPOSIT pulled by you'));
    RETURN;
  END IF;

  -- Every check that can refuse, before anything is written. EXIT checks leaves with v_refusal (or v_error) set.
  <<checks>>
  BEGIN
    SELECT w.id, w.app_id, w.owner_id, w.owner_type, w.status, w.currency, w.cvu, w.fee_type, w.fee_amount,
           w.monthly_withdraw_limit, w.annual_withdraw_limit, w.monthly_deposit_limit, w.annual_deposit_limit,
           coalesce(u.first_name || ' ' || u.last_name, c.legal_name) AS owner_name,
           coalesce(u.tax_id, c.tax_value) AS owner_tax_id,
           coalesce(u.tax_id_type, 'cuit') AS owner_tax_id_type, l.balance
      INTO acc
      FROM wallet_accounts w
      JOIN ledger_accounts l ON l.id = w.id
      LEFT JOIN users u ON w.owner_type = 'USER' AND u.id = w.owner_id
      LEFT JOIN companies c ON w.owner_type = 'COMPANY' AND c.id = w.owner_id
     WHERE w.id = (p->>'accountId')::uuid AND w.app_id = v_app AND w.status <> 'DELETED';
    IF NOT FOUND OR (p->>'subject' IS NOT NULL AND acc.owner_id::text <> p->>'subject') THEN
      v_refusal := jsonb_build_object('code', 'WT400', 'path', 'accountUUID', 'type', 'notfound', 'message', 'no such account');
      EXIT checks;
    END IF;
    IF acc.status <> 'ACTIVE' THEN
      v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE', 'message', 'the account is ' || acc.status);
      EXIT checks;
    END IF;
    v_units := (p->'minorUnits'->>acc.currency)::integer;
    IF v_units IS NULL THEN
      v_error := 'unsupported currency ' || acc.currency;
      EXIT checks;
    END IF;
    IF scale(v_amount) > v_units THEN
      v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
        'message', format('amount has more than %s decimals for %s', v_units, acc.currency));
      EXIT checks;
    END IF;
    IF v_amount < 0 THEN
      v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid', 'message', 'amount must not be negative');
      EXIT checks;
    END IF;
    IF v_amount < 1 THEN
      v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid', 'message', 'amount must be at least 1');
      EXIT checks;
    END IF;
    v_fee := CASE WHEN acc.fee_type = 'PERCENTAGE' THEN wallet_round(v_amount * acc.fee_amount / 100, v_units)
                  ELSE acc.fee_amount END;
    v_tax := wallet_round(v_amount * (p->>'taxRate')::numeric, v_units);
    v_total := v_amount + v_fee + v_tax;

    IF v_internal THEN
      IF recv.id = acc.id THEN
        v_refusal := jsonb_build_object('code', 'WT400', 'path', 'counterParty.identifier', 'type', 'invalid',
          'message', 'the counterparty is the same account');
        EXIT checks;
      END IF;
      -- Both ledger rows, in id order: concurrent transfers between the same accounts never deadlock. Rows
      -- this transaction locked already (p_locked, by wallet_create_transfers) were read with the sender.
      IF acc.id = ANY (p_locked) AND recv.id = ANY (p_locked) THEN
        v_balance := acc.balance;
      ELSE
        SELECT max(l.balance) FILTER (WHERE l.id = acc.id) INTO v_balance
          FROM (SELECT id, balance FROM ledger_accounts WHERE id IN (acc.id, recv.id) ORDER BY id FOR UPDATE) l;
      END IF;
      -- In a group, what its earlier internal transfers moved (p_group_sums, not written yet).
      v_balance := v_balance + coalesce(p_group_sums[3 * array_position(p_group_ids, acc.id) - 2], 0);
      IF recv.status <> 'ACTIVE' THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
          'message', 'the receiving account cannot receive money');
        EXIT checks;
      END IF;
      IF recv.currency <> acc.currency THEN
        v_refusal := jsonb_build_object('code', 'WT400', 'path', 'counterParty.identifier', 'type', 'invalid',
          'message', 'the receiving account holds another currency');
        EXIT checks;
      END IF;
    ELSIF acc.id = ANY (p_locked) THEN
      v_balance := acc.balance + coalesce(p_group_sums[3 * array_position(p_group_ids, acc.id) - 2], 0);
    ELSE
      SELECT balance INTO v_balance FROM ledger_accounts WHERE id = acc.id FOR UPDATE;
      v_balance := v_balance + coalesce(p_group_sums[3 * array_position(p_group_ids, acc.id) - 2], 0);
    END IF;

    IF v_internal OR v_movement = 'WITHDRAW' THEN
      IF v_balance < v_total THEN
        v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
          'message', 'insufficient funds: the available balance does not cover amount, fees and taxes');
        EXIT checks;
      END IF;
      v_side := 'withdraw';
      v_monthly := acc.monthly_withdraw_limit;
      v_annual := acc.annual_withdraw_limit;
    ELSE
      IF v_fee + v_tax >= v_amount THEN
        v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
          'message', 'amount does not cover the fee and taxes');
        EXIT checks;
      END IF;
      v_side := 'deposit';
      v_monthly := acc.monthly_deposit_limit;
      v_annual := acc.annual_deposit_limit;
    END IF;

    -- The limits (operated amounts plus in flight, as wallet_check_limits reads them) of the sender's side and,
    -- for an internal transfer, of the receiver's deposits, in one query (recv.id is NULL for an external one).
    -- The year's operated amount is the sum of its months' rows (decision 0035).
    SELECT o.month_used, o.year_used, o.recv_month_used, o.recv_year_used, f.in_flight, f.recv_in_flight
      INTO v_month_used, v_year_used, v_recv_month_used, v_recv_year_used, v_in_flight, v_recv_in_flight
      FROM (SELECT coalesce(sum(CASE WHEN v_side = 'deposit' THEN deposit ELSE withdraw END)
                              FILTER (WHERE account_id = acc.id AND period = v_month), 0) AS month_used,
                   coalesce(sum(CASE WHEN v_side = 'deposit' THEN deposit ELSE withdraw END)
                              FILTER (WHERE account_id = acc.id), 0) AS year_used,
                   coalesce(sum(deposit) FILTER (WHERE account_id = recv.id AND period = v_month), 0) AS recv_month_used,
                   coalesce(sum(deposit) FILTER (WHERE account_id = recv.id), 0) AS recv_year_used
              FROM operated_amounts
             WHERE account_id IN (acc.id, recv.id) AND period BETWEEN v_year_first AND v_year_last) o,
           (SELECT coalesce(sum(amount) FILTER (WHERE account_id = acc.id AND movement_type = upper(v_side)), 0)
                     AS in_flight,
                   coalesce(sum(amount) FILTER (WHERE account_id = recv.id AND movement_type = 'DEPOSIT'), 0)
                     AS recv_in_flight
              FROM transfers
             WHERE account_id IN (acc.id, recv.id) AND status IN ('COMMITING', 'INICIADO', 'EN_CURSO')) f;
    -- In a group (one month, wallet_create_transfers checks), its earlier internal transfers' operated amounts,
    -- not written yet: p_group_sums holds balance, withdrawals, deposits of each account of p_group_ids.
    v_used := coalesce(p_group_sums[3 * array_position(p_group_ids, acc.id) - CASE WHEN v_side = 'deposit' THEN 0 ELSE 1 END], 0);
    v_month_used := v_month_used + v_used;
    v_year_used := v_year_used + v_used;
    v_used := coalesce(p_group_sums[3 * array_position(p_group_ids, recv.id)], 0);
    v_recv_month_used := v_recv_month_used + v_used;
    v_recv_year_used := v_recv_year_used + v_used;
    IF v_month_used + v_in_flight + v_amount > v_monthly THEN
      v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
        'message', format('the monthly %s limit of %s would be exceeded', v_side, 'the account'));
      EXIT checks;
    END IF;
    IF v_year_used + v_in_flight + v_amount > v_annual THEN
      v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
        'message', format('the annual %s limit of %s would be exceeded', v_side, 'the account'));
      EXIT checks;
    END IF;
    IF v_internal THEN
      IF v_recv_month_used + v_recv_in_flight + v_amount > recv.monthly_deposit_limit THEN
        v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
          'message', 'the monthly deposit limit of the receiving account would be exceeded');
        EXIT checks;
      END IF;
      IF v_recv_year_used + v_recv_in_flight + v_amount > recv.annual_deposit_limit THEN
        v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
          'message', 'the annual deposit limit of the receiving account would be exceeded');
        EXIT checks;
      END IF;
    END IF;
  END checks;

  IF v_refusal IS NOT NULL OR v_error IS NOT NULL THEN
    -- A key already used wins over the refusal, as when the key was claimed first: claim it (which waits for a
    -- twin in flight), then give the claim back, or answer with what the key holds.
    IF v_key IS NOT NULL THEN
      INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES (v_app, v_key, v_hash) ON CONFLICT DO NOTHING;
      IF FOUND THEN
        DELETE FROM idempotency_keys WHERE app_id = v_app AND key = v_key;
      ELSE
        v_answer := wallet_key_answer(v_app, v_key, v_hash);
        IF v_answer IS NOT NULL THEN
          result := v_answer;
          RETURN;
        END IF;
      END IF;
    END IF;
    IF v_error IS NOT NULL THEN
      RAISE EXCEPTION '%', v_error;
    END IF;
    result := jsonb_build_object('refused', v_refusal);
    RETURN;
  END IF;

  IF v_internal THEN
    v_status := 'ACREDITADO';
    v_route := 'INTERNAL';
    v_deposit := uuidv7();
  ELSE
    v_status := 'INICIADO';
    v_route := 'EXTERNAL';
  END IF;
  v_created := now()::timestamp(3) with time zone; -- what created_at (timestamptz(3), default now()) stores
  -- Every value of the answer row is a string or null: jsonb_object builds it without looking up each value's
  -- type as jsonb_build_object does; created_at is written as jsonb writes a timestamptz.
  v_row := jsonb_object(
    ARRAY['id', 'clearing_id', 'movement_type', 'status', 'route', 'counterparty_name', 'counterparty_tax_id',
          'counterparty_identifier_type', 'counterparty_identifier', 'counterparty_account_id', 'amount', 'currency',
          'fees', 'taxes', 'concept', 'summary', 'description', 'created_at', 'owner_type', 'owner_id', 'cvu',
          'owner_name', 'owner_tax_id', 'owner_tax_id_type', 'counterparty_owner_id'],
    ARRAY[v_id::text, NULL, CASE WHEN v_internal THEN 'WITHDRAW' ELSE v_movement END, v_status, v_route,
          v_cp->>'name', v_cp->>'taxId', v_cp->>'identifierType', v_cp->>'identifier', recv.id::text,
          v_amount::text, acc.currency, v_fee::text, v_tax::text, p->>'concept', p->>'summary', NULL,
          to_jsonb(v_created) #>> '{}', acc.owner_type, acc.owner_id::text, acc.cvu, acc.owner_name,
          acc.owner_tax_id, acc.owner_tax_id_type, recv.owner_id::text]);

  -- The key's claim, with its answer: the first write. A twin that committed first is answered instead.
  IF v_key IS NOT NULL THEN
    INSERT INTO idempotency_keys (app_id, key, request_hash, response_status, response_body)
    VALUES (v_app, v_key, v_hash, 201, v_row) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
      v_answer := wallet_key_answer(v_app, v_key, v_hash);
      IF v_answer IS NOT NULL THEN
        result := v_answer;
        RETURN;
      END IF;
      v_unanswered := true;
    END IF;
  END IF;

  IF v_internal THEN
    IF v_fee <> 0 THEN v_fee_account := ledger_system_account('FEE_REVENUE', acc.currency); END IF;
    IF v_tax <> 0 THEN v_tax_account := ledger_system_account('TAX_PAYABLE', acc.currency); END IF;
    -- Both balances, and wallet_add_operated of both accounts (the sender's withdrawals, the receiver's deposits of
    -- the month): here for a single call or a group that spans two months; a group (p_group_ids) adds them up
    -- from write and writes them once, after its last transfer (wallet_create_transfers).
    IF p_group_ids IS NULL THEN
      UPDATE ledger_accounts a SET balance = a.balance + d.amount
        FROM (VALUES (acc.id, -v_total), (recv.id, v_amount - v_tax)) AS d(account_id, amount)
       WHERE a.id = d.account_id AND a.kind = 'WALLET' AND d.amount <> 0;
      INSERT INTO operated_amounts AS o (account_id, period, deposit, withdraw)
      VALUES (acc.id, v_month, 0, v_amount), (recv.id, v_month, v_amount, 0)
      ON CONFLICT (account_id, period) DO UPDATE
         SET deposit = o.deposit + EXCLUDED.deposit, withdraw = o.withdraw + EXCLUDED.withdraw, updated_at = now();
    END IF;
    -- The rows nothing in the group reads (entry, postings, both transfers, event): written by
    -- wallet_write_internal, here or, for a group, once for all of it.
    write := ROW(v_id, v_deposit, uuidv7(), acc.app_id, recv.app_id, acc.id, recv.id, v_cp->>'name',
                 v_cp->>'taxId', v_cp->>'identifierType', v_cp->>'identifier', v_cp->>'branch', v_amount,
                 acc.currency, v_fee, v_tax, v_total, p->>'concept', p->>'summary', p->>'actor', acc.owner_name,
                 acc.owner_tax_id, acc.cvu, v_fee_account, v_tax_account, p->>'requestId',
                 p->>'route')::wallet_internal_write;
    IF p_write THEN
      PERFORM wallet_write_internal(ARRAY[write]);
    END IF;
  ELSE
    IF v_movement = 'WITHDRAW' THEN
      -- The hold: amount + fee + tax leave the available balance now; the rail captures or releases it.
      PERFORM ledger_post(acc.app_id, 'TRANSFER_HOLD', v_id::text, NULL, p->>'actor',
        ARRAY[acc.id, ledger_system_account('HOLDS', acc.currency)], ARRAY[-v_total, v_total], acc.currency);
    END IF;
    INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name, counterparty_tax_id,
           counterparty_identifier_type, counterparty_identifier, counterparty_branch, counterparty_account_id,
           linked_transfer_id, amount, currency, fees, taxes, concept, summary)
    VALUES (v_id, acc.app_id, acc.id, v_movement, v_status, v_route,
            v_cp->>'name', v_cp->>'taxId', v_cp->>'identifierType', v_cp->>'identifier', v_cp->>'branch',
            NULL, NULL, v_amount, acc.currency, v_fee, v_tax, p->>'concept', p->>'summary');
    PERFORM audit_append(acc.app_id, p->>'actor', p->>'route', 'transfer', v_id::text, v_status, p->>'requestId');
  END IF;

  IF v_unanswered THEN
    UPDATE idempotency_keys SET response_status = 201, response_body = v_row WHERE app_id = v_app AND key = v_key;
  END IF;
  result := jsonb_build_object('row', v_row, 'submit', NOT v_internal);
END
$function$

`;

const CREATE_TRANSFERS_BEFORE = `-- A group commit of POST /wallet/transactions (TransferBatcher, docs/decisions/0015 and 0021):
-- SELECT wallet_create_transfers($1::jsonb) with an array of TransferRequest; the answer is an array, in the same
-- order, of TransferResult or {refused} (TransferGroupResult, src/modules/transfers/transfer-function.contract.ts).
-- Guarantees: first every ledger row the group may touch (senders and the live accounts behind the
-- counterparty numbers) is locked in id order (index probes: its cost grows with the group, not the accounts), so concurrent groups never deadlock on them; then each transfer
-- is checked and applied on its own, in arrival order, against the balances and limits the earlier ones left
-- (the same Idempotency-Key twice replays the first's answer); a refusal answers only its own request and
-- writes nothing; the internal transfers' rows are written once for the group (wallet_write_internal), and
-- so are, for a group of one month, their balances and operated amounts (one UPDATE, one upsert: decision 0035). One
-- transaction, one WAL flush for the whole group. Sequential scans are off while it runs (docs/decisions/0022).
CREATE OR REPLACE FUNCTION public.wallet_create_transfers(p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_results jsonb[] := '{}';
  v_writes wallet_internal_write[] := '{}';
  v_try record;
  v_item jsonb;
  v_locked uuid[];
  v_ids uuid[];
  v_sums numeric[];
  v_month text;
  v_w wallet_internal_write;
  v_g integer;
BEGIN
  -- = ANY (ARRAY(…)): one index probe per account of the group, whatever the planner guesses of the JSON's
  -- length (an IN (subquery) was planned as a scan of every account's key, decision 0035).
  SELECT array_agg(id) INTO v_locked FROM (
    SELECT id FROM ledger_accounts
     WHERE id = ANY (ARRAY(SELECT (e->>'accountId')::uuid FROM jsonb_array_elements(p) AS e
                           UNION
                           SELECT w.id FROM wallet_accounts w
                            WHERE w.cvu = ANY (ARRAY(SELECT e->'counterparty'->>'identifier'
                                                       FROM jsonb_array_elements(p) AS e))
                              AND w.status <> 'DELETED'))
       AND kind = 'WALLET'
     ORDER BY id FOR UPDATE) l;
  -- A group of one month (every group but one that straddles a month's end) adds up what its internal transfers move, per
  -- account (v_ids; v_sums: balance, withdrawals, deposits of the month, three per account), and writes balances
  -- and operated amounts once, after the last one; each transfer's checks see the sums so far
  -- (wallet_transfer_try's p_group_ids, p_group_sums). Otherwise (v_ids NULL) each transfer writes its own.
  SELECT CASE WHEN count(DISTINCT e->>'month') = 1 THEN '{}'::uuid[] END, min(e->>'month'),
         array_fill(0::numeric, ARRAY[6 * count(*)::integer])
    INTO v_ids, v_month, v_sums FROM jsonb_array_elements(p) AS e;
  FOR v_item IN SELECT e FROM jsonb_array_elements(p) AS e LOOP
    v_try := wallet_transfer_try(v_item, v_locked, false, v_ids, v_sums);
    v_results := v_results || v_try.result;
    IF (v_try.write).id IS NOT NULL THEN
      v_w := v_try.write;
      v_writes := v_writes || v_w;
      IF v_ids IS NOT NULL THEN
        v_g := array_position(v_ids, v_w.account_id);
        IF v_g IS NULL THEN
          v_ids := v_ids || v_w.account_id;
          v_g := cardinality(v_ids);
        END IF;
        v_sums[3 * v_g - 2] := v_sums[3 * v_g - 2] - v_w.total;
        v_sums[3 * v_g - 1] := v_sums[3 * v_g - 1] + v_w.amount;
        v_g := array_position(v_ids, v_w.recv_id);
        IF v_g IS NULL THEN
          v_ids := v_ids || v_w.recv_id;
          v_g := cardinality(v_ids);
        END IF;
        v_sums[3 * v_g - 2] := v_sums[3 * v_g - 2] + v_w.amount - v_w.tax;
        v_sums[3 * v_g] := v_sums[3 * v_g] + v_w.amount;
      END IF;
    END IF;
  END LOOP;
  IF cardinality(v_writes) > 0 THEN
    PERFORM wallet_write_internal(v_writes);
  END IF;
  IF cardinality(v_ids) > 0 THEN
    -- The rows were locked above, in id order; = ANY (v_ids) keeps it one index probe per account.
    UPDATE ledger_accounts a SET balance = a.balance + d.amount
      FROM (SELECT v_ids[i] AS id, v_sums[3 * i - 2] AS amount FROM generate_subscripts(v_ids, 1) AS i) d
     WHERE a.id = ANY (v_ids) AND a.id = d.id AND a.kind = 'WALLET' AND d.amount <> 0;
    INSERT INTO operated_amounts AS o (account_id, period, deposit, withdraw)
    SELECT v_ids[i], v_month, v_sums[3 * i], v_sums[3 * i - 1] FROM generate_subscripts(v_ids, 1) AS i
    ON CONFLICT (account_id, period) DO UPDATE
       SET deposit = o.deposit + EXCLUDED.deposit, withdraw = o.withdraw + EXCLUDED.withdraw, updated_at = now();
  END IF;
  RETURN to_jsonb(v_results);
END
$function$

`;

const CREATE_TRANSFER_BEFORE = `-- The single call of POST /wallet/transactions: SELECT wallet_create_transfer($1::jsonb), one statement in
-- autocommit, one round trip (docs/decisions/0015). p is a TransferRequest and the answer a TransferResult
-- (src/modules/transfers/transfer-function.contract.ts): {row, submit} or {replay}.
-- Guarantees: everything wallet_transfer_try guarantees, in one transaction; a refusal is raised with
-- wallet_refuse (SQLSTATE WT400/WT403), so the statement writes nothing. Sequential scans are off while it
-- runs (docs/decisions/0022): its statements stay index probes whatever the statistics were when a connection
-- planned them.
CREATE OR REPLACE FUNCTION public.wallet_create_transfer(p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  v_result jsonb := (wallet_transfer_try(p)).result;
  v_refused jsonb := v_result->'refused';
BEGIN
  IF v_refused IS NOT NULL THEN
    PERFORM wallet_refuse(v_refused->>'code', v_refused->>'path', v_refused->>'type', v_refused->>'message');
  END IF;
  RETURN v_result;
END
$function$

`;
