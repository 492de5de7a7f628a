import type { MigrationInterface, QueryRunner } from 'typeorm';
import { CREATE_TRANSFER, CREATE_TRANSFERS } from './1763900700000-TransferFunction.js';

/**
 * The money path, same answers for less PostgreSQL work (docs/decisions/0017-leaner-transfer-function.md).
 *
 * `wallet_transfer_try(jsonb)` does what `wallet_create_transfer` did, but every check that can refuse runs
 * before the first write, and a refusal is returned ({refused: {code, path, type, message}}), not raised. So
 * `wallet_create_transfers` needs no subtransaction per transfer (a refused transfer wrote nothing to undo),
 * and `wallet_create_transfer` raises the refusal it gets, as before.
 * - The Idempotency-Key is claimed after the checks, with its answer, in one INSERT … ON CONFLICT DO NOTHING
 *   (which, as before, waits for a twin in flight and then replays its answer, or refuses a different body).
 *   A refused transfer with a key first claims it the same way and deletes its own claim: a twin in flight is
 *   waited for, and a key already used wins over the refusal, in the same order as before.
 * - Fewer statements for an internal transfer: the limits of both accounts (operated amounts and in-flight
 *   sums) in one query; the journal entry, postings and both balances written here (ledger_post's three
 *   writes, without its call and checks, which cannot fail for an entry built here: it sums to zero by
 *   construction, and the deferred postings_balance trigger still checks it); both transfer rows in one
 *   INSERT, their four history rows in one, the four operated amounts in one upsert.
 * - External transfers are written as before (the hold still goes through ledger_post).
 * - A group passes the ledger rows it locked up front (p_locked): a transfer whose rows are among them reads the
 *   sender's balance with the sender instead of locking again.
 */
export class LeanerTransferFunction1763900800000 implements MigrationInterface {
  name = 'LeanerTransferFunction1763900800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(KEY_ANSWER);
    await queryRunner.query(TRANSFER_TRY);
    await queryRunner.query(CREATE_TRANSFER_V2);
    await queryRunner.query(CREATE_TRANSFERS_V2);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(CREATE_TRANSFERS.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'));
    await queryRunner.query(CREATE_TRANSFER.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'));
    await queryRunner.query(`DROP FUNCTION "wallet_transfer_try"(jsonb, uuid[])`);
    await queryRunner.query(`DROP FUNCTION "wallet_key_answer"(uuid, text, text)`);
  }
}

/** wallet_create_transfer as this migration defines it: raises the refusal wallet_transfer_try returns. */
export const CREATE_TRANSFER_V2 = `
CREATE OR REPLACE FUNCTION "wallet_create_transfer"(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_result jsonb := wallet_transfer_try(p);
  v_refused jsonb := v_result->'refused';
BEGIN
  IF v_refused IS NOT NULL THEN
    PERFORM wallet_refuse(v_refused->>'code', v_refused->>'path', v_refused->>'type', v_refused->>'message');
  END IF;
  RETURN v_result;
END
$$`;

/** wallet_create_transfers as this migration defines it: the group's ledger rows locked first, then each try. */
export const CREATE_TRANSFERS_V2 = `
CREATE OR REPLACE FUNCTION "wallet_create_transfers"(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_results jsonb[] := '{}';
  v_item jsonb;
  v_locked uuid[];
BEGIN
  SELECT array_agg(id) INTO v_locked FROM (
    SELECT id FROM ledger_accounts
     WHERE id IN (SELECT (e->>'accountId')::uuid FROM jsonb_array_elements(p) AS e
                  UNION
                  SELECT w.id FROM wallet_accounts w
                   WHERE w.cvu IN (SELECT e->'counterparty'->>'identifier' FROM jsonb_array_elements(p) AS e)
                     AND w.status <> 'DELETED')
       AND kind = 'WALLET'
     ORDER BY id FOR UPDATE) l;
  FOR v_item IN SELECT e FROM jsonb_array_elements(p) AS e LOOP
    v_results := v_results || wallet_transfer_try(v_item, v_locked);
  END LOOP;
  RETURN to_jsonb(v_results);
END
$$`;

/**
 * The answer for an Idempotency-Key another request has claimed (its claim committed, or is ours from earlier
 * in this group): a refusal when the body differs, the stored answer to replay, or NULL while it has none.
 */
const KEY_ANSWER = `
CREATE FUNCTION "wallet_key_answer"(p_app uuid, p_key text, p_hash text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  stored record;
BEGIN
  SELECT request_hash, response_body INTO stored FROM idempotency_keys WHERE app_id = p_app AND key = p_key;
  IF stored.request_hash <> p_hash THEN
    RETURN jsonb_build_object('refused', jsonb_build_object('code', 'WT400', 'path', 'Idempotency-Key',
      'type', 'invalid', 'message', 'this Idempotency-Key was used with a different request'));
  END IF;
  IF stored.response_body IS NOT NULL THEN
    RETURN jsonb_build_object('replay', stored.response_body);
  END IF;
  RETURN NULL;
END
$$`;

/**
 * Input: one wallet_create_transfer input (migrations/1763900700000-TransferFunction.ts). Output: that
 * function's output, or {refused: {code, path, type, message}} (path '' for a 403) having written nothing.
 * Refusals in the order of the first version: an internal DEPOSIT; the key (a different body, or a replay);
 * the sender (scope, state), the amount (decimals, sign, minimum); the same account; the receiver (state,
 * currency); funds (or fee and taxes of an external DEPOSIT); the sender's monthly and annual limits; the
 * receiver's.
 */
export const TRANSFER_TRY = `
CREATE FUNCTION "wallet_transfer_try"(p jsonb, p_locked uuid[] DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_app uuid := (p->>'appId')::uuid;
  v_key text := p->>'idempotencyKey';
  v_hash text := p->>'requestHash';
  v_amount numeric := (p->>'amount')::numeric;
  v_movement text := p->>'movementType';
  v_cp jsonb := p->'counterparty';
  v_month text := p->>'month';
  v_year text := p->>'year';
  v_id uuid := gen_random_uuid();
  v_deposit uuid;
  v_entry uuid;
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
    RETURN jsonb_build_object('refused', jsonb_build_object('code', 'WT400', 'path', 'movementType', 'type', 'invalid',
      'message', 'money from an account of this service comes as its WITHDRAW, not as a DEPOSIT pulled by you'));
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
      v_balance := acc.balance;
    ELSE
      SELECT balance INTO v_balance FROM ledger_accounts WHERE id = acc.id FOR UPDATE;
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
    SELECT o.month_used, o.year_used, o.recv_month_used, o.recv_year_used, f.in_flight, f.recv_in_flight
      INTO v_month_used, v_year_used, v_recv_month_used, v_recv_year_used, v_in_flight, v_recv_in_flight
      FROM (SELECT coalesce(sum(CASE WHEN v_side = 'deposit' THEN deposit ELSE withdraw END)
                              FILTER (WHERE account_id = acc.id AND period = v_month), 0) AS month_used,
                   coalesce(sum(CASE WHEN v_side = 'deposit' THEN deposit ELSE withdraw END)
                              FILTER (WHERE account_id = acc.id AND period = v_year), 0) AS year_used,
                   coalesce(sum(deposit) FILTER (WHERE account_id = recv.id AND period = v_month), 0) AS recv_month_used,
                   coalesce(sum(deposit) FILTER (WHERE account_id = recv.id AND period = v_year), 0) AS recv_year_used
              FROM operated_amounts
             WHERE account_id IN (acc.id, recv.id) AND period IN (v_month, v_year)) o,
           (SELECT coalesce(sum(amount) FILTER (WHERE account_id = acc.id AND movement_type = upper(v_side)), 0)
                     AS in_flight,
                   coalesce(sum(amount) FILTER (WHERE account_id = recv.id AND movement_type = 'DEPOSIT'), 0)
                     AS recv_in_flight
              FROM transfers
             WHERE account_id IN (acc.id, recv.id) AND status IN ('COMMITING', 'INICIADO', 'EN_CURSO')) f;
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
          RETURN v_answer;
        END IF;
      END IF;
    END IF;
    IF v_error IS NOT NULL THEN
      RAISE EXCEPTION '%', v_error;
    END IF;
    RETURN jsonb_build_object('refused', v_refusal);
  END IF;

  IF v_internal THEN
    v_status := 'ACREDITADO';
    v_route := 'INTERNAL';
    v_deposit := gen_random_uuid();
  ELSE
    v_status := 'INICIADO';
    v_route := 'EXTERNAL';
  END IF;
  v_created := now()::timestamp(3) with time zone; -- what created_at (timestamptz(3), default now()) stores
  v_row := jsonb_build_object(
    'id', v_id, 'clearing_id', NULL, 'movement_type', CASE WHEN v_internal THEN 'WITHDRAW' ELSE v_movement END,
    'status', v_status, 'route', v_route, 'counterparty_name', v_cp->>'name',
    'counterparty_tax_id', v_cp->>'taxId', 'counterparty_identifier_type', v_cp->>'identifierType',
    'counterparty_identifier', v_cp->>'identifier', 'counterparty_account_id', recv.id,
    'amount', v_amount::text, 'currency', acc.currency, 'fees', v_fee::text, 'taxes', v_tax::text,
    'concept', p->>'concept', 'summary', p->>'summary', 'description', NULL, 'created_at', v_created,
    'owner_type', acc.owner_type, 'owner_id', acc.owner_id, 'cvu', acc.cvu, 'owner_name', acc.owner_name,
    'owner_tax_id', acc.owner_tax_id, 'owner_tax_id_type', acc.owner_tax_id_type,
    'counterparty_owner_id', recv.owner_id);

  -- The key's claim, with its answer: the first write. A twin that committed first is answered instead.
  IF v_key IS NOT NULL THEN
    INSERT INTO idempotency_keys (app_id, key, request_hash, response_status, response_body)
    VALUES (v_app, v_key, v_hash, 201, v_row) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
      v_answer := wallet_key_answer(v_app, v_key, v_hash);
      IF v_answer IS NOT NULL THEN
        RETURN v_answer;
      END IF;
      v_unanswered := true;
    END IF;
  END IF;

  IF v_internal THEN
    IF v_fee <> 0 THEN v_fee_account := ledger_system_account('FEE_REVENUE', acc.currency); END IF;
    IF v_tax <> 0 THEN v_tax_account := ledger_system_account('TAX_PAYABLE', acc.currency); END IF;
    -- ledger_post's entry: the tax applies to debits and credits, the receiver pays it on what it receives.
    v_entry := gen_random_uuid();
    INSERT INTO journal_entries (id, app_id, kind, reference, description, actor)
    VALUES (v_entry, acc.app_id, 'INTERNAL_TRANSFER', v_id::text, NULL, p->>'actor');
    INSERT INTO postings (entry_id, account_id, amount, currency)
    SELECT v_entry, t.account_id, t.amount, acc.currency
      FROM (VALUES (acc.id, -v_total), (recv.id, v_amount - v_tax), (v_fee_account, v_fee),
                   (v_tax_account, v_tax + v_tax)) AS t(account_id, amount)
     WHERE t.amount <> 0;
    UPDATE ledger_accounts a SET balance = a.balance + d.amount
      FROM (VALUES (acc.id, -v_total), (recv.id, v_amount - v_tax)) AS d(account_id, amount)
     WHERE a.id = d.account_id AND a.kind = 'WALLET' AND d.amount <> 0;

    -- The sender's WITHDRAW and the receiver's own DEPOSIT record (docs/decisions/0013), with their history.
    INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name, counterparty_tax_id,
           counterparty_identifier_type, counterparty_identifier, counterparty_branch, counterparty_account_id,
           linked_transfer_id, amount, currency, fees, taxes, concept, summary)
    VALUES (v_id, acc.app_id, acc.id, 'WITHDRAW', v_status, v_route,
            v_cp->>'name', v_cp->>'taxId', v_cp->>'identifierType', v_cp->>'identifier', v_cp->>'branch',
            recv.id, v_deposit, v_amount, acc.currency, v_fee, v_tax, p->>'concept', p->>'summary'),
           (v_deposit, recv.app_id, recv.id, 'DEPOSIT', 'ACREDITADO', 'INTERNAL', coalesce(acc.owner_name, ''),
            coalesce(acc.owner_tax_id, ''), 'CVU', acc.cvu, NULL, acc.id, v_id, v_amount, acc.currency, 0, v_tax,
            p->>'concept', p->>'summary');
    INSERT INTO transfer_status_history (transfer_id, from_status, to_status)
    VALUES (v_id, NULL, 'COMMITING'), (v_id, 'COMMITING', v_status),
           (v_deposit, NULL, 'COMMITING'), (v_deposit, 'COMMITING', 'ACREDITADO');
    -- wallet_add_operated of both accounts: the sender's withdrawals, the receiver's deposits.
    INSERT INTO operated_amounts AS o (account_id, period, deposit, withdraw)
    VALUES (acc.id, v_month, 0, v_amount), (acc.id, v_year, 0, v_amount),
           (recv.id, v_month, v_amount, 0), (recv.id, v_year, v_amount, 0)
    ON CONFLICT (account_id, period) DO UPDATE
       SET deposit = o.deposit + EXCLUDED.deposit, withdraw = o.withdraw + EXCLUDED.withdraw, updated_at = now();
    -- The receiver's application hears of it (transfer_update).
    INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
    VALUES (gen_random_uuid(), recv.app_id, 'transfer_update', v_deposit::text,
            jsonb_build_object('event', 'transfer_update', 'timestamp', floor(extract(epoch FROM now()))::bigint,
              'data', jsonb_build_object('uuid', v_deposit, 'movementType', 'DEPOSIT',
                                         'backStatus', 'PENDING', 'newStatus', 'ACCEPTED')),
            'pending', now());
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
    INSERT INTO transfer_status_history (transfer_id, from_status, to_status)
    VALUES (v_id, NULL, 'COMMITING'), (v_id, 'COMMITING', v_status);
  END IF;

  IF v_unanswered THEN
    UPDATE idempotency_keys SET response_status = 201, response_body = v_row WHERE app_id = v_app AND key = v_key;
  END IF;
  RETURN jsonb_build_object('row', v_row, 'submit', NOT v_internal);
END
$$`;
