import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The money path in one round trip (docs/decisions/0015-money-path.md).
 *
 * `wallet_create_transfer(jsonb)` does everything POST /wallet/transactions writes, in the caller's single
 * statement: the idempotency claim, the sender (scoped to the application and, for a user token, its owner),
 * the routing (one of our CVUs → internal), fee and tax, the row locks in id order, the funds and limit checks,
 * the journal entry, both transfer records with their history, the operated amounts and the outbox row. A
 * refusal raises SQLSTATE WT400 (DETAIL = the field's path, HINT = the error type) or WT403 (HINT = the reason),
 * which rolls the whole statement back: a refused request writes nothing.
 *
 * Helpers: `ledger_post` (one balanced entry, cached wallet balances moved), `ledger_system_account` (the
 * deterministic id of a system account, created on first use; the same derivation as systemAccountId() in
 * TypeScript), `wallet_round` (half-even to the currency's minor units, like Money), `wallet_check_limits` and
 * `wallet_add_operated`. A partial index serves the in-flight sum of the limit check from the few pending rows.
 * `wallet_create_transfers(jsonb)` runs several transfers as one group commit (see below).
 */
export class TransferFunction1763900700000 implements MigrationInterface {
  name = 'TransferFunction1763900700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "idx_transfers_account_in_flight" ON "transfers" ("account_id", "movement_type")
        WHERE "status" IN ('COMMITING', 'INICIADO', 'EN_CURSO')`,
    );
    await queryRunner.query(`
      CREATE FUNCTION "wallet_refuse"(p_code text, p_path text, p_type text, p_message text) RETURNS void
      LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION USING ERRCODE = p_code, MESSAGE = p_message, DETAIL = coalesce(p_path, ''), HINT = p_type;
      END
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION "wallet_round"(p_value numeric, p_units integer) RETURNS numeric
      LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE
          WHEN abs(p_value * power(10::numeric, p_units) - trunc(p_value * power(10::numeric, p_units))) = 0.5
          THEN round((trunc(p_value * power(10::numeric, p_units))
                      + CASE WHEN mod(trunc(p_value * power(10::numeric, p_units)), 2) = 0 THEN 0 ELSE sign(p_value) END)
                     / power(10::numeric, p_units), p_units)
          ELSE round(p_value, p_units)
        END
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION "ledger_system_account"(p_code text, p_currency text) RETURNS uuid
      LANGUAGE plpgsql AS $$
      DECLARE
        h text := encode(sha256(convert_to('wallet-system-account:' || p_code || ':' || p_currency, 'UTF8')), 'hex');
        v_id uuid := (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-5' || substr(h, 14, 3) || '-8'
                      || substr(h, 18, 3) || '-' || substr(h, 21, 12))::uuid;
      BEGIN
        PERFORM 1 FROM ledger_accounts WHERE id = v_id;
        IF NOT FOUND THEN
          INSERT INTO ledger_accounts (id, kind, code, currency, balance) VALUES (v_id, 'SYSTEM', p_code, p_currency, 0)
          ON CONFLICT (id) DO NOTHING;
        END IF;
        RETURN v_id;
      END
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION "ledger_post"(p_app uuid, p_kind text, p_reference text, p_description text, p_actor text,
                                    p_accounts uuid[], p_amounts numeric[], p_currency text) RETURNS uuid
      LANGUAGE plpgsql AS $$
      DECLARE
        v_entry uuid := gen_random_uuid();
        v_sum numeric;
        v_lines integer;
      BEGIN
        SELECT coalesce(sum(amount), 0), count(*) INTO v_sum, v_lines
          FROM unnest(p_amounts) AS t(amount) WHERE amount <> 0;
        IF v_sum <> 0 THEN
          RAISE EXCEPTION 'journal entry does not balance in %: %', p_currency, v_sum;
        END IF;
        IF v_lines < 2 THEN
          RAISE EXCEPTION 'a journal entry needs at least two non-zero postings';
        END IF;
        INSERT INTO journal_entries (id, app_id, kind, reference, description, actor)
        VALUES (v_entry, p_app, p_kind, p_reference, p_description, p_actor);
        INSERT INTO postings (entry_id, account_id, amount, currency)
        SELECT v_entry, account_id, amount, p_currency
          FROM unnest(p_accounts, p_amounts) AS t(account_id, amount) WHERE amount <> 0;
        UPDATE ledger_accounts a SET balance = a.balance + d.amount
          FROM (SELECT account_id, sum(amount) AS amount FROM unnest(p_accounts, p_amounts) AS t(account_id, amount)
                 WHERE amount <> 0 GROUP BY account_id) d
         WHERE a.id = d.account_id AND a.kind = 'WALLET';
        RETURN v_entry;
      END
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION "wallet_check_limits"(p_account uuid, p_side text, p_amount numeric, p_monthly numeric,
                                            p_annual numeric, p_month text, p_year text, p_whose text) RETURNS void
      LANGUAGE plpgsql AS $$
      DECLARE
        v_month numeric;
        v_year numeric;
        v_in_flight numeric;
      BEGIN
        SELECT coalesce(sum(CASE WHEN p_side = 'deposit' THEN deposit ELSE withdraw END) FILTER (WHERE period = p_month), 0),
               coalesce(sum(CASE WHEN p_side = 'deposit' THEN deposit ELSE withdraw END) FILTER (WHERE period = p_year), 0)
          INTO v_month, v_year
          FROM operated_amounts WHERE account_id = p_account AND period IN (p_month, p_year);
        SELECT coalesce(sum(amount), 0) INTO v_in_flight FROM transfers
         WHERE account_id = p_account AND movement_type = upper(p_side)
           AND status IN ('COMMITING', 'INICIADO', 'EN_CURSO');
        IF v_month + v_in_flight + p_amount > p_monthly THEN
          PERFORM wallet_refuse('WT400', 'amount', 'invalid',
                                format('the monthly %s limit of %s would be exceeded', p_side, p_whose));
        END IF;
        IF v_year + v_in_flight + p_amount > p_annual THEN
          PERFORM wallet_refuse('WT400', 'amount', 'invalid',
                                format('the annual %s limit of %s would be exceeded', p_side, p_whose));
        END IF;
      END
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION "wallet_add_operated"(p_account uuid, p_side text, p_amount numeric, p_month text, p_year text)
      RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        IF p_side = 'deposit' THEN
          INSERT INTO operated_amounts (account_id, period, deposit) VALUES (p_account, p_month, p_amount), (p_account, p_year, p_amount)
          ON CONFLICT (account_id, period) DO UPDATE SET deposit = operated_amounts.deposit + EXCLUDED.deposit, updated_at = now();
        ELSE
          INSERT INTO operated_amounts (account_id, period, withdraw) VALUES (p_account, p_month, p_amount), (p_account, p_year, p_amount)
          ON CONFLICT (account_id, period) DO UPDATE SET withdraw = operated_amounts.withdraw + EXCLUDED.withdraw, updated_at = now();
        END IF;
      END
      $$`);
    await queryRunner.query(CREATE_TRANSFER);
    await queryRunner.query(CREATE_TRANSFERS);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION "wallet_create_transfers"(jsonb)`);
    await queryRunner.query(`DROP FUNCTION "wallet_create_transfer"(jsonb)`);
    await queryRunner.query(`DROP FUNCTION "wallet_add_operated"(uuid, text, numeric, text, text)`);
    await queryRunner.query(
      `DROP FUNCTION "wallet_check_limits"(uuid, text, numeric, numeric, numeric, text, text, text)`,
    );
    await queryRunner.query(
      `DROP FUNCTION "ledger_post"(uuid, text, text, text, text, uuid[], numeric[], text)`,
    );
    await queryRunner.query(`DROP FUNCTION "ledger_system_account"(text, text)`);
    await queryRunner.query(`DROP FUNCTION "wallet_round"(numeric, integer)`);
    await queryRunner.query(`DROP FUNCTION "wallet_refuse"(text, text, text, text)`);
    await queryRunner.query(`DROP INDEX "idx_transfers_account_in_flight"`);
  }
}

/**
 * Input (p): appId, subject (a user token's subject, or null), accountId, amount (decimal text), movementType,
 * counterparty {name, taxId, identifierType, identifier, branch}, concept, summary, actor, taxRate (decimal
 * text), minorUnits ({currency: decimals}), month and year (operated-amount periods), idempotencyKey and
 * requestHash (or null).
 * Output: {replay: <stored row>} for a replayed key, else {row: <the sender's transfer as a view row>, submit:
 * true when it goes to the clearing rail}. Amounts in the row are decimal text, never JSON numbers.
 */
export const CREATE_TRANSFER = `
CREATE FUNCTION "wallet_create_transfer"(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_app uuid := (p->>'appId')::uuid;
  v_key text := p->>'idempotencyKey';
  v_amount numeric := (p->>'amount')::numeric;
  v_movement text := p->>'movementType';
  v_cp jsonb := p->'counterparty';
  v_month text := p->>'month';
  v_year text := p->>'year';
  v_actor text := p->>'actor';
  v_id uuid := gen_random_uuid();
  v_deposit uuid;
  v_internal boolean;
  v_units integer;
  v_fee numeric;
  v_tax numeric;
  v_total numeric;
  v_balance numeric;
  v_created timestamptz;
  v_status text;
  v_route text;
  v_row jsonb;
  acc record;
  recv record;
  stored record;
  locked record;
BEGIN
  SELECT w.id, w.app_id, w.owner_id, w.status, w.currency, w.monthly_deposit_limit, w.annual_deposit_limit
    INTO recv FROM wallet_accounts w WHERE w.cvu = v_cp->>'identifier' AND w.status <> 'DELETED';
  v_internal := FOUND;
  IF v_internal AND v_movement = 'DEPOSIT' THEN
    PERFORM wallet_refuse('WT400', 'movementType', 'invalid',
      'money from an account of this service comes as its WITHDRAW, not as a DEPOSIT pulled by you');
  END IF;

  IF v_key IS NOT NULL THEN
    INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES (v_app, v_key, p->>'requestHash')
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
      -- The first request with this key committed (this insert waited for it): replay its answer.
      SELECT request_hash, response_body INTO stored FROM idempotency_keys WHERE app_id = v_app AND key = v_key;
      IF stored.request_hash <> p->>'requestHash' THEN
        PERFORM wallet_refuse('WT400', 'Idempotency-Key', 'invalid',
          'this Idempotency-Key was used with a different request');
      END IF;
      IF stored.response_body IS NOT NULL THEN
        RETURN jsonb_build_object('replay', stored.response_body);
      END IF;
    END IF;
  END IF;

  SELECT w.id, w.app_id, w.owner_id, w.owner_type, w.status, w.currency, w.cvu, w.fee_type, w.fee_amount,
         w.monthly_withdraw_limit, w.annual_withdraw_limit, w.monthly_deposit_limit, w.annual_deposit_limit,
         coalesce(u.first_name || ' ' || u.last_name, c.legal_name) AS owner_name,
         coalesce(u.tax_id, c.tax_value) AS owner_tax_id,
         coalesce(u.tax_id_type, 'cuit') AS owner_tax_id_type
    INTO acc
    FROM wallet_accounts w
    LEFT JOIN users u ON w.owner_type = 'USER' AND u.id = w.owner_id
    LEFT JOIN companies c ON w.owner_type = 'COMPANY' AND c.id = w.owner_id
   WHERE w.id = (p->>'accountId')::uuid AND w.app_id = v_app AND w.status <> 'DELETED';
  IF NOT FOUND OR (p->>'subject' IS NOT NULL AND acc.owner_id::text <> p->>'subject') THEN
    PERFORM wallet_refuse('WT400', 'accountUUID', 'notfound', 'no such account');
  END IF;
  IF acc.status <> 'ACTIVE' THEN
    PERFORM wallet_refuse('WT403', NULL, 'INVALID_STATE', 'the account is ' || acc.status);
  END IF;
  v_units := (p->'minorUnits'->>acc.currency)::integer;
  IF v_units IS NULL THEN
    RAISE EXCEPTION 'unsupported currency %', acc.currency;
  END IF;
  IF scale(v_amount) > v_units THEN
    PERFORM wallet_refuse('WT400', 'amount', 'invalid',
      format('amount has more than %s decimals for %s', v_units, acc.currency));
  END IF;
  IF v_amount < 0 THEN
    PERFORM wallet_refuse('WT400', 'amount', 'invalid', 'amount must not be negative');
  END IF;
  IF v_amount < 1 THEN
    PERFORM wallet_refuse('WT400', 'amount', 'invalid', 'amount must be at least 1');
  END IF;
  v_fee := CASE WHEN acc.fee_type = 'PERCENTAGE' THEN wallet_round(v_amount * acc.fee_amount / 100, v_units)
                ELSE acc.fee_amount END;
  v_tax := wallet_round(v_amount * (p->>'taxRate')::numeric, v_units);
  v_total := v_amount + v_fee + v_tax;

  IF v_internal THEN
    IF recv.id = acc.id THEN
      PERFORM wallet_refuse('WT400', 'counterParty.identifier', 'invalid', 'the counterparty is the same account');
    END IF;
    -- Both ledger rows, in id order: concurrent transfers between the same accounts never deadlock.
    FOR locked IN SELECT id, balance FROM ledger_accounts WHERE id IN (acc.id, recv.id) ORDER BY id FOR UPDATE LOOP
      IF locked.id = acc.id THEN v_balance := locked.balance; END IF;
    END LOOP;
    IF recv.status <> 'ACTIVE' THEN
      PERFORM wallet_refuse('WT403', NULL, 'INVALID_STATE', 'the receiving account cannot receive money');
    END IF;
    IF recv.currency <> acc.currency THEN
      PERFORM wallet_refuse('WT400', 'counterParty.identifier', 'invalid', 'the receiving account holds another currency');
    END IF;
  ELSE
    SELECT balance INTO v_balance FROM ledger_accounts WHERE id = acc.id FOR UPDATE;
  END IF;

  IF v_internal OR v_movement = 'WITHDRAW' THEN
    IF v_balance < v_total THEN
      PERFORM wallet_refuse('WT400', 'amount', 'invalid',
        'insufficient funds: the available balance does not cover amount, fees and taxes');
    END IF;
    PERFORM wallet_check_limits(acc.id, 'withdraw', v_amount, acc.monthly_withdraw_limit, acc.annual_withdraw_limit,
                                v_month, v_year, 'the account');
  ELSE
    IF v_fee + v_tax >= v_amount THEN
      PERFORM wallet_refuse('WT400', 'amount', 'invalid', 'amount does not cover the fee and taxes');
    END IF;
    PERFORM wallet_check_limits(acc.id, 'deposit', v_amount, acc.monthly_deposit_limit, acc.annual_deposit_limit,
                                v_month, v_year, 'the account');
  END IF;

  IF v_internal THEN
    PERFORM wallet_check_limits(recv.id, 'deposit', v_amount, recv.monthly_deposit_limit, recv.annual_deposit_limit,
                                v_month, v_year, 'the receiving account');
    -- The tax applies to debits and credits: the receiver pays it on what it receives.
    PERFORM ledger_post(acc.app_id, 'INTERNAL_TRANSFER', v_id::text, NULL, v_actor,
      ARRAY[acc.id, recv.id,
            CASE WHEN v_fee <> 0 THEN ledger_system_account('FEE_REVENUE', acc.currency) END,
            CASE WHEN v_tax <> 0 THEN ledger_system_account('TAX_PAYABLE', acc.currency) END],
      ARRAY[-v_total, v_amount - v_tax, v_fee, v_tax + v_tax], acc.currency);
    v_status := 'ACREDITADO';
    v_route := 'INTERNAL';
    v_deposit := gen_random_uuid();
  ELSIF v_movement = 'WITHDRAW' THEN
    -- The hold: amount + fee + tax leave the available balance now; the rail captures or releases it.
    PERFORM ledger_post(acc.app_id, 'TRANSFER_HOLD', v_id::text, NULL, v_actor,
      ARRAY[acc.id, ledger_system_account('HOLDS', acc.currency)], ARRAY[-v_total, v_total], acc.currency);
    v_status := 'INICIADO';
    v_route := 'EXTERNAL';
  ELSE
    v_status := 'INICIADO';
    v_route := 'EXTERNAL';
  END IF;

  INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name, counterparty_tax_id,
         counterparty_identifier_type, counterparty_identifier, counterparty_branch, counterparty_account_id,
         linked_transfer_id, amount, currency, fees, taxes, concept, summary)
  VALUES (v_id, acc.app_id, acc.id, CASE WHEN v_internal THEN 'WITHDRAW' ELSE v_movement END, v_status, v_route,
          v_cp->>'name', v_cp->>'taxId', v_cp->>'identifierType', v_cp->>'identifier', v_cp->>'branch',
          recv.id, v_deposit, v_amount, acc.currency, v_fee, v_tax, p->>'concept', p->>'summary')
  RETURNING created_at INTO v_created;
  INSERT INTO transfer_status_history (transfer_id, from_status, to_status)
  VALUES (v_id, NULL, 'COMMITING'), (v_id, 'COMMITING', v_status);

  IF v_internal THEN
    -- The receiver's own DEPOSIT record, and its application's transfer_update (docs/decisions/0013).
    INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name, counterparty_tax_id,
           counterparty_identifier_type, counterparty_identifier, counterparty_branch, counterparty_account_id,
           linked_transfer_id, amount, currency, fees, taxes, concept, summary)
    VALUES (v_deposit, recv.app_id, recv.id, 'DEPOSIT', 'ACREDITADO', 'INTERNAL', coalesce(acc.owner_name, ''),
            coalesce(acc.owner_tax_id, ''), 'CVU', acc.cvu, NULL, acc.id, v_id, v_amount, acc.currency, 0, v_tax,
            p->>'concept', p->>'summary');
    INSERT INTO transfer_status_history (transfer_id, from_status, to_status)
    VALUES (v_deposit, NULL, 'COMMITING'), (v_deposit, 'COMMITING', 'ACREDITADO');
    PERFORM wallet_add_operated(acc.id, 'withdraw', v_amount, v_month, v_year);
    PERFORM wallet_add_operated(recv.id, 'deposit', v_amount, v_month, v_year);
    INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
    VALUES (gen_random_uuid(), recv.app_id, 'transfer_update', v_deposit::text,
            jsonb_build_object('event', 'transfer_update', 'timestamp', floor(extract(epoch FROM now()))::bigint,
              'data', jsonb_build_object('uuid', v_deposit, 'movementType', 'DEPOSIT',
                                         'backStatus', 'PENDING', 'newStatus', 'ACCEPTED')),
            'pending', now());
  END IF;

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
  IF v_key IS NOT NULL THEN
    UPDATE idempotency_keys SET response_status = 201, response_body = v_row WHERE app_id = v_app AND key = v_key;
  END IF;
  RETURN jsonb_build_object('row', v_row, 'submit', NOT v_internal);
END
$$`;

/**
 * Group commit: several transfers in one transaction and one round trip (one WAL flush for all). Each runs in
 * its own subtransaction, so a refusal undoes only its own writes and every transfer is still checked on its
 * own, in order (a later one sees the balances the earlier ones left). Every ledger row the batch can touch is
 * locked first, in id order, so concurrent batches never deadlock on them.
 * Input: a JSON array of wallet_create_transfer inputs. Output: an array of the same length whose elements are
 * that function's output or {refused: {code, path, type, message}}.
 */
export const CREATE_TRANSFERS = `
CREATE FUNCTION "wallet_create_transfers"(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_results jsonb := '[]'::jsonb;
  v_item jsonb;
  v_code text;
  v_message text;
  v_path text;
  v_type text;
BEGIN
  PERFORM 1 FROM ledger_accounts
   WHERE id IN (SELECT (e->>'accountId')::uuid FROM jsonb_array_elements(p) AS e
                UNION
                SELECT w.id FROM wallet_accounts w
                 WHERE w.cvu IN (SELECT e->'counterparty'->>'identifier' FROM jsonb_array_elements(p) AS e)
                   AND w.status <> 'DELETED')
     AND kind = 'WALLET'
   ORDER BY id FOR UPDATE;
  FOR v_item IN SELECT e FROM jsonb_array_elements(p) AS e LOOP
    BEGIN
      v_results := v_results || jsonb_build_array(wallet_create_transfer(v_item));
    EXCEPTION WHEN SQLSTATE 'WT400' OR SQLSTATE 'WT403' THEN
      GET STACKED DIAGNOSTICS v_code = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_path = PG_EXCEPTION_DETAIL,
                              v_type = PG_EXCEPTION_HINT;
      v_results := v_results || jsonb_build_array(jsonb_build_object('refused',
        jsonb_build_object('code', v_code, 'path', v_path, 'type', v_type, 'message', v_message)));
    END;
  END LOOP;
  RETURN v_results;
END
$$`;
