-- POST /wallet/transactions (TransferBatcher: a group commit of concurrent requests, or one request alone), decisions
-- 0015, 0021 and 0047: SELECT wallet_create_transfers($1::jsonb) with an array of TransferRequest; the answer is an
-- array, in the same order, of TransferResult or {refused} (TransferGroupResult,
-- src/modules/transfers/transfer-function.contract.ts). result {row, submit} is a new transfer, {replay} its
-- Idempotency-Key's stored answer, {refused} (code, path, type, message) a refusal.
-- Guarantees:
-- - first every ledger row the group may touch (senders and the live accounts behind the counterparty numbers)
--   is locked in id order (index probes: the cost grows with the group, not the accounts), so concurrent groups
--   never deadlock on them and two transfers cannot spend the same money; then the group's accounts are read
--   once, after the lock, with what bounds them (balance, the month's and the year's operated amounts, what is
--   in flight: wallet_group_account), and again after each month's end inside the group;
-- - each transfer is then checked and applied on its own, in arrival order, against what the earlier ones
--   left: the sums of what they moved (v_moved … v_in) are added to what was read;
-- - routing: a live CVU of this service makes the transfer INTERNAL (settled here, ACREDITADO on both sides),
--   anything else EXTERNAL (INICIADO, money held, submitted to the clearing rail after commit: submit true);
-- - every check that can refuse (account in scope of the application and, for a user token, its owner; state;
--   decimals and minimum for the currency; the counterparty; funds for amount + fee + tax; the monthly and
--   annual limits of both sides, in flight included) runs before the transfer's first write: a refusal writes
--   nothing and answers only its own request;
-- - the Idempotency-Key is claimed with its answer in one INSERT … ON CONFLICT DO NOTHING, which waits for a
--   twin in flight; an already used key wins over a refusal; a different body under the same key is refused;
--   the same key twice in a group replays the first's answer;
-- - operated amounts are kept per month only (the sender's withdrawals, the receiver's deposits); a year's is the
--   sum of its months' rows (decision 0035); the month and year checked and written are those of the transfers'
--   created_at, the call's now() on the calendar of TransferRequest.timeZone (wallet_periods, once per call:
--   decision 0098), however long the request waited before the call; a request that carries month and year (an
--   API of the code before 0098, during a rolling upgrade) is checked and counted in those;
-- - an internal transfer's balances and operated amounts are written once per month of the group (one UPDATE,
--   one upsert), its entry, postings, two transfer rows, the receiver's webhook event and the audit record once
--   for the group (wallet_write_internal), or once for those before each external WITHDRAW's hold, so every
--   account's postings are timed in the order the checks ran (decision 0081); an external WITHDRAW holds amount + fee + tax (ledger_post to HOLDS);
--   an external transfer's row and audit record (audit_append, with the request's requestId and route) are
--   written at once; a refusal or a replay writes none (decision 0032);
-- - new ids are time-ordered (decision 0042): a transfer's (an internal one's WITHDRAW) is the request's id, made by
--   the API (TransferRequest.id), so that a call whose answer was lost can be looked up (decision 0066; a request
--   without one, as sent before, gets uuidv7()); an internal one's DEPOSIT and its journal entry take uuidv7();
-- - no history row for the creation: COMMITING → the first status is implied by the transfer row (the view
--   transfer_status_path, decision 0035); later clearing steps add their rows (TransferWriter.moveStatus).
-- One transaction, one WAL flush for the whole group. While it runs, sequential and bitmap scans are off (decisions
-- 0022, 0047: its statements are index probes whatever the statistics were when a connection planned them) and each
-- statement keeps one generic plan per connection (plan_cache_mode): no statement is planned again on a call.
CREATE OR REPLACE FUNCTION public.wallet_create_transfers(p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
AS $function$
DECLARE
  v_items jsonb[] := ARRAY(SELECT e FROM jsonb_array_elements(p) AS e);
  v_results jsonb[] := '{}';
  v_writes wallet_internal_write[] := '{}';
  v_locked uuid[];
  -- The group's accounts as read for the month being checked (v_month), by id (v_acc_ids) and live CVU (v_acc_cvus).
  v_accs wallet_group_account[];
  v_acc_ids uuid[];
  v_acc_cvus text[];
  -- What the group's transfers of v_month did so far, per account of v_accs: v_moved, v_withdrawn, v_deposited
  -- (internal transfers: the balance and operated amounts written at the month's end), v_held (the balance an
  -- external hold moved, written already by ledger_post), v_out, v_in (what external transfers put in flight).
  v_moved numeric[];
  v_withdrawn numeric[];
  v_deposited numeric[];
  v_held numeric[];
  v_out numeric[];
  v_in numeric[];
  v_month text;
  v_now_month text;
  v_now_year text;
  v_first text;
  v_last text;
  v_n integer := cardinality(v_items);
  v_i integer;
  v_a integer;
  v_r integer;
  v_item jsonb;
  v_app uuid;
  v_key text;
  v_hash text;
  v_amount numeric;
  v_movement text;
  v_cp jsonb;
  v_id uuid;
  v_deposit uuid;
  v_internal boolean;
  v_units integer;
  v_fee numeric;
  v_tax numeric;
  v_total numeric;
  v_side text;
  v_monthly numeric;
  v_annual numeric;
  v_month_used numeric;
  v_year_used numeric;
  v_in_flight numeric;
  v_fee_account uuid;
  v_tax_account uuid;
  v_created timestamptz;
  v_status text;
  v_route text;
  v_row jsonb;
  v_refusal jsonb;
  v_error text;
  v_unanswered boolean;
  v_answer jsonb;
  acc wallet_group_account;
  recv wallet_group_account;
BEGIN
  -- = ANY (ARRAY(…)): one index probe per account of the group, whatever the planner guesses of the JSON's
  -- length (an IN (subquery) was planned as a scan of every account's key, decision 0035).
  SELECT array_agg(id) INTO v_locked FROM (
    SELECT id FROM ledger_accounts
     WHERE id = ANY (ARRAY(SELECT (e->>'accountId')::uuid FROM jsonb_array_elements(p) AS e
                           UNION ALL
                           SELECT w.id FROM wallet_accounts w
                            WHERE w.cvu = ANY (ARRAY(SELECT e->'counterparty'->>'identifier'
                                                       FROM jsonb_array_elements(p) AS e))
                              AND w.status <> 'DELETED'))
       AND kind = 'WALLET'
     ORDER BY id FOR UPDATE) l;

  -- The period of now(), which every created_at of the call is: once for the group.
  IF v_items[1] ? 'timeZone' THEN
    SELECT n.month, n.year INTO v_now_month, v_now_year FROM wallet_periods(v_items[1]->>'timeZone') n;
  END IF;

  -- One pass more than the group: a month's sums are written when the next transfer is of another month, or
  -- after the last one (v_i = v_n + 1).
  FOR v_i IN 1 .. v_n + 1 LOOP
    v_item := v_items[v_i];
    IF v_i > v_n OR v_month IS DISTINCT FROM coalesce(v_item->>'month', v_now_month) THEN
      IF v_month IS NOT NULL THEN
        -- The rows were locked above, in id order; = ANY (v_acc_ids) keeps it one index probe per account.
        UPDATE ledger_accounts a SET balance = a.balance + d.amount
          FROM unnest(v_acc_ids, v_moved) AS d(id, amount)
         WHERE a.id = ANY (v_acc_ids) AND a.id = d.id AND a.kind = 'WALLET' AND d.amount <> 0;
        INSERT INTO operated_amounts AS o (account_id, period, deposit, withdraw)
        SELECT d.id, v_month, d.deposit, d.withdraw
          FROM unnest(v_acc_ids, v_deposited, v_withdrawn) AS d(id, deposit, withdraw)
         WHERE d.deposit <> 0 OR d.withdraw <> 0
        ON CONFLICT (account_id, period) DO UPDATE
           SET deposit = o.deposit + EXCLUDED.deposit, withdraw = o.withdraw + EXCLUDED.withdraw, updated_at = now();
      END IF;
      EXIT WHEN v_i > v_n;
      v_month := coalesce(v_item->>'month', v_now_month);
      v_first := 'M' || substr(coalesce(v_item->>'year', v_now_year), 2) || '-01';
      v_last := 'M' || substr(coalesce(v_item->>'year', v_now_year), 2) || '-12';
      -- The accounts, read after the lock: what each check needs, the month's and the year's operated amounts
      -- (the year's is the sum of its months' rows, decision 0035) and what is in flight, per side.
      SELECT array_agg(ROW(w.id, w.app_id, w.owner_id, w.owner_type, w.status, w.currency, w.cvu, w.fee_type,
                           w.fee_amount, w.monthly_withdraw_limit, w.annual_withdraw_limit, w.monthly_deposit_limit,
                           w.annual_deposit_limit, coalesce(u.first_name || ' ' || u.last_name, c.legal_name),
                           coalesce(u.tax_id, c.tax_value), coalesce(u.tax_id_type, 'cuit'), l.balance,
                           o.month_withdraw, o.month_deposit, o.year_withdraw, o.year_deposit, f.out, f."in"
                          )::wallet_group_account),
             array_agg(w.id),
             array_agg(CASE WHEN w.status <> 'DELETED' THEN w.cvu END)
        INTO v_accs, v_acc_ids, v_acc_cvus
        FROM wallet_accounts w
        JOIN ledger_accounts l ON l.id = w.id
        LEFT JOIN users u ON w.owner_type = 'USER' AND u.id = w.owner_id
        LEFT JOIN companies c ON w.owner_type = 'COMPANY' AND c.id = w.owner_id
        CROSS JOIN LATERAL (
          SELECT coalesce(sum(withdraw) FILTER (WHERE period = v_month), 0) AS month_withdraw,
                 coalesce(sum(deposit) FILTER (WHERE period = v_month), 0) AS month_deposit,
                 coalesce(sum(withdraw) FILTER (WHERE period BETWEEN v_first AND v_last), 0)
                   AS year_withdraw,
                 coalesce(sum(deposit) FILTER (WHERE period BETWEEN v_first AND v_last), 0)
                   AS year_deposit
            FROM operated_amounts
           WHERE account_id = w.id
             AND period BETWEEN least(v_month, v_first) AND greatest(v_month, v_last)) o
        CROSS JOIN LATERAL (
          SELECT coalesce(sum(amount) FILTER (WHERE movement_type = 'WITHDRAW'), 0) AS out,
                 coalesce(sum(amount) FILTER (WHERE movement_type = 'DEPOSIT'), 0) AS "in"
            FROM transfers
           WHERE account_id = w.id AND status IN ('COMMITING', 'INICIADO', 'EN_CURSO')) f
       WHERE w.id = ANY (v_locked);
      v_moved := array_fill(0::numeric, ARRAY[coalesce(cardinality(v_acc_ids), 0)]);
      v_withdrawn := v_moved;
      v_deposited := v_moved;
      v_held := v_moved;
      v_out := v_moved;
      v_in := v_moved;
    END IF;

    v_app := (v_item->>'appId')::uuid;
    v_key := v_item->>'idempotencyKey';
    v_hash := v_item->>'requestHash';
    v_amount := (v_item->>'amount')::numeric;
    v_movement := v_item->>'movementType';
    v_cp := v_item->'counterparty';
    v_id := coalesce((v_item->>'id')::uuid, uuidv7());
    v_deposit := NULL;
    v_fee_account := NULL;
    v_tax_account := NULL;
    v_refusal := NULL;
    v_error := NULL;
    v_unanswered := false;
    v_r := CASE WHEN v_cp->>'identifier' IS NOT NULL THEN array_position(v_acc_cvus, v_cp->>'identifier') END;
    v_internal := v_r IS NOT NULL;
    recv := v_accs[v_r];
    IF v_internal AND v_movement = 'DEPOSIT' THEN
      v_results := v_results || jsonb_build_object('refused', jsonb_build_object('code', 'WT400',
        'path', 'movementType', 'type', 'invalid',
        'message', 'money from an account of this service comes as its WITHDRAW, not as a DEPOSIT pulled by you'));
      CONTINUE;
    END IF;

    -- Every check that can refuse, before anything is written. EXIT checks leaves with v_refusal (or v_error) set.
    <<checks>>
    BEGIN
      v_a := array_position(v_acc_ids, (v_item->>'accountId')::uuid);
      acc := v_accs[v_a];
      IF v_a IS NULL OR acc.app_id <> v_app OR acc.status = 'DELETED'
         OR (v_item->>'subject' IS NOT NULL AND acc.owner_id::text <> v_item->>'subject') THEN
        v_refusal := jsonb_build_object('code', 'WT400', 'path', 'accountUUID', 'type', 'notfound', 'message', 'no such account');
        EXIT checks;
      END IF;
      IF acc.status <> 'ACTIVE' THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE', 'message', 'the account is ' || acc.status);
        EXIT checks;
      END IF;
      v_units := (v_item->'minorUnits'->>acc.currency)::integer;
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
      v_tax := wallet_round(v_amount * (v_item->>'taxRate')::numeric, v_units);
      v_total := v_amount + v_fee + v_tax;

      IF v_internal THEN
        IF recv.id = acc.id THEN
          v_refusal := jsonb_build_object('code', 'WT400', 'path', 'counterParty.identifier', 'type', 'invalid',
            'message', 'the counterparty is the same account');
          EXIT checks;
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
      END IF;

      IF v_internal OR v_movement = 'WITHDRAW' THEN
        IF acc.balance + v_moved[v_a] + v_held[v_a] < v_total THEN
          v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
            'message', 'insufficient funds: the available balance does not cover amount, fees and taxes');
          EXIT checks;
        END IF;
        v_side := 'withdraw';
        v_monthly := acc.monthly_withdraw_limit;
        v_annual := acc.annual_withdraw_limit;
        v_month_used := acc.month_withdraw + v_withdrawn[v_a];
        v_year_used := acc.year_withdraw + v_withdrawn[v_a];
        v_in_flight := acc.in_flight_withdraw + v_out[v_a];
      ELSE
        IF v_fee + v_tax >= v_amount THEN
          v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
            'message', 'amount does not cover the fee and taxes');
          EXIT checks;
        END IF;
        v_side := 'deposit';
        v_monthly := acc.monthly_deposit_limit;
        v_annual := acc.annual_deposit_limit;
        v_month_used := acc.month_deposit + v_deposited[v_a];
        v_year_used := acc.year_deposit + v_deposited[v_a];
        v_in_flight := acc.in_flight_deposit + v_in[v_a];
      END IF;
      -- The limits: operated amounts plus in flight, as wallet_check_limits reads them.
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
        v_in_flight := recv.in_flight_deposit + v_in[v_r];
        IF recv.month_deposit + v_deposited[v_r] + v_in_flight + v_amount > recv.monthly_deposit_limit THEN
          v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
            'message', 'the monthly deposit limit of the receiving account would be exceeded');
          EXIT checks;
        END IF;
        IF recv.year_deposit + v_deposited[v_r] + v_in_flight + v_amount > recv.annual_deposit_limit THEN
          v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
            'message', 'the annual deposit limit of the receiving account would be exceeded');
          EXIT checks;
        END IF;
      END IF;
    END checks;

    IF v_refusal IS NOT NULL OR v_error IS NOT NULL THEN
      -- A key already used wins over the refusal, as when the key was claimed first: claim it (which waits for a
      -- twin in flight), then give the claim back, or answer with what the key holds.
      v_answer := NULL;
      IF v_key IS NOT NULL THEN
        INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES (v_app, v_key, v_hash) ON CONFLICT DO NOTHING;
        IF FOUND THEN
          DELETE FROM idempotency_keys WHERE app_id = v_app AND key = v_key;
        ELSE
          v_answer := wallet_key_answer(v_app, v_key, v_hash);
        END IF;
      END IF;
      IF v_answer IS NOT NULL THEN
        v_results := v_results || v_answer;
        CONTINUE;
      END IF;
      IF v_error IS NOT NULL THEN
        RAISE EXCEPTION '%', v_error;
      END IF;
      v_results := v_results || jsonb_build_object('refused', v_refusal);
      CONTINUE;
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
            v_amount::text, acc.currency, v_fee::text, v_tax::text, v_item->>'concept', v_item->>'summary', NULL,
            to_jsonb(v_created) #>> '{}', acc.owner_type, acc.owner_id::text, acc.cvu, acc.owner_name,
            acc.owner_tax_id, acc.owner_tax_id_type, recv.owner_id::text]);

    -- The key's claim, with its answer: the transfer's first write. A twin that committed first is answered instead.
    IF v_key IS NOT NULL THEN
      INSERT INTO idempotency_keys (app_id, key, request_hash, response_status, response_body)
      VALUES (v_app, v_key, v_hash, 201, v_row) ON CONFLICT DO NOTHING;
      IF NOT FOUND THEN
        v_answer := wallet_key_answer(v_app, v_key, v_hash);
        IF v_answer IS NOT NULL THEN
          v_results := v_results || v_answer;
          CONTINUE;
        END IF;
        v_unanswered := true;
      END IF;
    END IF;

    IF v_internal THEN
      IF v_fee <> 0 THEN v_fee_account := ledger_system_account('FEE_REVENUE', acc.currency); END IF;
      IF v_tax <> 0 THEN v_tax_account := ledger_system_account('TAX_PAYABLE', acc.currency); END IF;
      v_moved[v_a] := v_moved[v_a] - v_total;
      v_withdrawn[v_a] := v_withdrawn[v_a] + v_amount;
      v_moved[v_r] := v_moved[v_r] + v_amount - v_tax;
      v_deposited[v_r] := v_deposited[v_r] + v_amount;
      -- The rows nothing in the group reads (entry, postings, both transfers, event, audit record): written by
      -- wallet_write_internal once for the group.
      v_writes := v_writes || ROW(v_id, v_deposit, uuidv7(), acc.app_id, recv.app_id, acc.id, recv.id,
                    v_cp->>'name', v_cp->>'taxId', v_cp->>'identifierType', v_cp->>'identifier', v_cp->>'branch',
                    v_amount, acc.currency, v_fee, v_tax, v_total, v_item->>'concept', v_item->>'summary',
                    v_item->>'actor', acc.owner_name, acc.owner_tax_id, acc.cvu, v_fee_account, v_tax_account,
                    v_item->>'requestId', v_item->>'route')::wallet_internal_write;
    ELSE
      IF v_movement = 'WITHDRAW' THEN
        -- The internal transfers checked before this hold are written first: their postings must be timed before
        -- the hold's (statements and balances as of a time read postings in (created_at, id) order, the order the
        -- checks ran), or a hold paid by a credit earlier in the group shows a balance the account never had.
        IF cardinality(v_writes) > 0 THEN
          PERFORM wallet_write_internal(v_writes);
          v_writes := '{}';
        END IF;
        -- The hold: amount + fee + tax leave the available balance now; the rail captures or releases it.
        PERFORM ledger_post(acc.app_id, 'TRANSFER_HOLD', v_id::text, NULL, v_item->>'actor',
          ARRAY[acc.id, ledger_system_account('HOLDS', acc.currency)], ARRAY[-v_total, v_total], acc.currency);
        v_held[v_a] := v_held[v_a] - v_total;
        v_out[v_a] := v_out[v_a] + v_amount;
      ELSE
        v_in[v_a] := v_in[v_a] + v_amount;
      END IF;
      INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name, counterparty_tax_id,
             counterparty_identifier_type, counterparty_identifier, counterparty_branch, counterparty_account_id,
             linked_transfer_id, amount, currency, fees, taxes, concept, summary)
      VALUES (v_id, acc.app_id, acc.id, v_movement, v_status, v_route,
              v_cp->>'name', v_cp->>'taxId', v_cp->>'identifierType', v_cp->>'identifier', v_cp->>'branch',
              NULL, NULL, v_amount, acc.currency, v_fee, v_tax, v_item->>'concept', v_item->>'summary');
      PERFORM audit_append(acc.app_id, v_item->>'actor', v_item->>'route', 'transfer', v_id::text, v_status,
                           v_item->>'requestId');
    END IF;

    IF v_unanswered THEN
      UPDATE idempotency_keys SET response_status = 201, response_body = v_row WHERE app_id = v_app AND key = v_key;
    END IF;
    v_results := v_results || jsonb_build_object('row', v_row, 'submit', NOT v_internal);
  END LOOP;
  IF cardinality(v_writes) > 0 THEN
    PERFORM wallet_write_internal(v_writes);
  END IF;
  RETURN to_jsonb(v_results);
END
$function$

