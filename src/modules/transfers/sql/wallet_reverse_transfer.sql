-- Money back along a settled transfer (docs/decisions/0031-reversals.md): p is a ReversalRequest
-- (src/modules/transfers/transfer-function.contract.ts), the answer a ReversalResult: {row} (the new transfer as
-- the caller sees it, reversal_of included) or {replay} (its Idempotency-Key's stored answer). Two kinds:
-- - 'reversal' (POST /wallet/transactions/{uuid}/reversals): an INTERNAL transfer, ACREDITADO, addressed by either
--   of its two rows by the application of the account that received it (with a user token, by that account's
--   owner, addressing a row of one of its own accounts: decision 0052); the receiver's new WITHDRAW and the
--   original sender's new DEPOSIT (INTERNAL, ACREDITADO, linked to each other), each with reversal_of = the
--   original row of its own account; an entry TRANSFER_REVERSAL (receiver -amount, sender +amount); a
--   transfer_update for each application;
-- - 'return' (the rail gives back an EXTERNAL WITHDRAW that was ACREDITADO; CLI `transfers return`): the sender's
--   new DEPOSIT (EXTERNAL, ACREDITADO, reversal_of = the WITHDRAW); an entry TRANSFER_RETURN (SETTLEMENT -amount,
--   sender +amount); a transfer_update for the sender's application. The rail has paid, so a return is never
--   refused for the account's state (decision 0062): an INACTIVE or PENDING account is credited as an ACTIVE one;
--   a DELETED account is not, its money goes to the system account UNCLAIMED_RETURNS instead (the same DEPOSIT
--   row, event and audit record; the entry's credit line is UNCLAIMED_RETURNS) and a row in unclaimed_returns
--   names the DEPOSIT until an operator pays it out (CLI `transfers pay-out`).
-- Guarantees:
-- - a caller outside the transfer's scope (another application's, or a user token's for a row of another owner's
--   account) is answered 404 from a plain read, before any lock: it never waits for, nor delays, the transfer's
--   own application (a transfer's app_id and account_id never change). The owner of the account that gives back
--   is checked under its ledger lock, on the read the answer is built from: an application can move an account
--   to another owner, and does so under that lock (decision 0068);
-- - the original pair's transfer rows are locked (FOR UPDATE, id order), then the ledger rows (id order, as
--   wallet_create_transfers locks them), so reversals never deadlock with transfers or the clearing steps, and
--   concurrent reversals of one transfer run one after the other;
-- - the reversed total (the amounts of the rows whose reversal_of is the original WITHDRAW) never exceeds the
--   original amount; the amount defaults to what is left;
-- - every check that can refuse (the transfer: found in scope (the application's; with a user token, a row of
--   the owner's own accounts), not a reversal, ACREDITADO, of the kind asked; who gives back;
--   the amount; both accounts ACTIVE for a reversal; the funds of the account that gives back) runs before the
--   first write; a refusal is raised with wallet_refuse (WT400/WT403, WT404 for an unknown transfer), so nothing
--   is written;
-- - no fee, no tax, no operated amounts, no limit check: a reversal undoes money that was already counted;
-- - the Idempotency-Key (already in the reversal namespace, see the contract) is claimed with its answer as in
--   wallet_create_transfers: an already used key wins over a refusal; another body under the same key is refused.
--   A return's key is the rail's reference (`return <reference>`), claimed under the returned WITHDRAW's
--   application (the rail is no application; an inbound credit's reference is claimed under its account's in the
--   same way); another request under it is refused at `reference` (duplicate), not at Idempotency-Key;
-- - one audit record (audit_append, docs/decisions/0032-audit-trail.md) in the same transaction: the new row of
--   the account that gave the money (the caller's WITHDRAW), or the returned DEPOSIT (also when its money went to
--   UNCLAIMED_RETURNS); none for a refusal or a replay. actor goes on the journal entry, auditActor/route/requestId
--   on the audit record.
-- - each new row's transfer_update has the original row of its own account (its reversal_of, of the same
--   application) as subject: delivery is ordered per subject (decision 0008), so an application hears of a
--   reversal or a return only after every earlier event of the transfer it gives back (decision 0071);
-- - no history rows: the new rows' creation (COMMITING → ACREDITADO) is implied by them (transfer_status_path,
--   decision 0035);
-- - the new rows' ids (both transfers, the events) are time-ordered, as a transfer's (decisions 0042, 0050): the row
--   the caller is answered (a reversal's WITHDRAW, a return's DEPOSIT) takes the request's id, made by the API, so
--   that a call whose answer was lost can be looked up (decision 0066; a request without one gets uuidv7()); the
--   other rows take uuidv7().
CREATE OR REPLACE FUNCTION public.wallet_reverse_transfer(p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_return boolean := p->>'kind' = 'return';
  v_app uuid := (p->>'appId')::uuid;
  v_subject uuid := (p->>'subject')::uuid;
  v_key text := p->>'idempotencyKey';
  v_hash text := p->>'requestHash';
  v_reused jsonb := CASE WHEN p->>'kind' = 'return' THEN jsonb_build_object('code', 'WT400', 'path', 'reference',
    'type', 'duplicate', 'message', 'this reference was used for another return') END;
  v_id uuid := (p->>'transferId')::uuid;
  v_amount numeric := (p->>'amount')::numeric;
  v_linked uuid;
  v_owner_app uuid;
  v_account uuid;
  v_unclaimed boolean := false;
  v_units integer;
  v_reversed numeric;
  v_left numeric;
  v_balance numeric;
  v_rw uuid := CASE WHEN p->>'kind' = 'return' THEN uuidv7() ELSE coalesce((p->>'id')::uuid, uuidv7()) END;
  v_rd uuid := CASE WHEN p->>'kind' = 'return' THEN coalesce((p->>'id')::uuid, uuidv7()) ELSE uuidv7() END;
  v_created timestamptz;
  v_row jsonb;
  v_refusal jsonb;
  v_answer jsonb;
  v_unanswered boolean := false;
  t record;
  w record;
  d record;
  giver record;
  taker record;
BEGIN
  <<checks>>
  BEGIN
    -- The scope first, from a plain read (linked_transfer_id, app_id and account_id never change): a caller that
    -- is answered 404 takes no lock, so it never waits for the transfer's own application nor delays it.
    SELECT x.linked_transfer_id, x.app_id, x.account_id INTO v_linked, v_owner_app, v_account
      FROM transfers x WHERE x.id = v_id;
    IF NOT FOUND OR (NOT v_return AND v_owner_app <> v_app) THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
    END IF;
    -- A user token reaches only the rows of its owner's accounts (as GET /wallet/transactions/{uuid}).
    IF v_subject IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM wallet_accounts a WHERE a.id = v_account AND a.owner_id = v_subject) THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
    END IF;
    -- The original pair, locked in id order, then read under the lock.
    PERFORM 1 FROM transfers x WHERE x.id IN (v_id, v_linked) ORDER BY x.id FOR UPDATE;
    SELECT * INTO t FROM transfers x WHERE x.id = v_id;
    IF v_return THEN
      v_app := t.app_id; -- the application a return's reference is claimed under
    END IF;
    IF t.reversal_of IS NOT NULL THEN
      v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
        'message', 'this transfer is itself a reversal and cannot be reversed');
      EXIT checks;
    END IF;
    IF t.status <> 'ACREDITADO' THEN
      v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
        'message', 'the transfer is ' || t.status || ': only an ACREDITADO transfer can be reversed');
      EXIT checks;
    END IF;
    IF v_return THEN
      IF t.route <> 'EXTERNAL' OR t.movement_type <> 'WITHDRAW' THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
          'message', 'only an EXTERNAL WITHDRAW can be returned by the rail');
        EXIT checks;
      END IF;
      w := t;
    ELSE
      IF t.route = 'EXTERNAL' THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
          'message', CASE WHEN t.movement_type = 'WITHDRAW'
                          THEN 'money sent to another institution comes back only as a return from the rail'
                          ELSE 'money from another institution is sent back as a new transfer, not reversed' END);
        EXIT checks;
      END IF;
      IF t.movement_type = 'WITHDRAW' THEN
        w := t;
        SELECT * INTO d FROM transfers x WHERE x.id = v_linked;
      ELSE
        d := t;
        SELECT * INTO w FROM transfers x WHERE x.id = v_linked;
      END IF;
      IF d.app_id <> v_app THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'FORBIDDEN',
          'message', 'only the application of the account that received the transfer can give it back');
        EXIT checks;
      END IF;
    END IF;

    SELECT coalesce(sum(x.amount), 0) INTO v_reversed FROM transfers x WHERE x.reversal_of = w.id;
    v_left := w.amount - v_reversed;
    v_units := (p->'minorUnits'->>w.currency)::integer;
    IF v_amount IS NULL THEN
      IF v_left <= 0 THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
          'message', 'the transfer is already fully reversed');
        EXIT checks;
      END IF;
      v_amount := v_left;
    ELSIF v_units IS NOT NULL AND scale(v_amount) > v_units THEN
      v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
        'message', format('amount has more than %s decimals for %s', v_units, w.currency));
      EXIT checks;
    ELSIF v_amount <= 0 THEN
      v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
        'message', 'amount must be greater than 0');
      EXIT checks;
    ELSIF v_amount > v_left THEN
      v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
        'message', format('amount is more than what is left to reverse (%s %s)', trim_scale(v_left), w.currency));
      EXIT checks;
    END IF;

    -- The accounts: the one that gives back (the receiver; none for a return) and the original sender. Their
    -- ledger rows are locked first and their states read after, so an account closed by a transaction that held
    -- the lock is seen closed (each statement reads what committed before it began).
    IF v_return THEN
      PERFORM 1 FROM ledger_accounts l WHERE l.id = w.account_id FOR UPDATE;
    ELSE
      SELECT max(l.balance) FILTER (WHERE l.id = d.account_id) INTO v_balance
        FROM (SELECT id, balance FROM ledger_accounts WHERE id IN (d.account_id, w.account_id) ORDER BY id FOR UPDATE) l;
    END IF;
    SELECT a.id, a.app_id, a.status, a.owner_type, a.owner_id, a.cvu,
           coalesce(u.first_name || ' ' || u.last_name, c.legal_name) AS owner_name,
           coalesce(u.tax_id, c.tax_value) AS owner_tax_id, coalesce(u.tax_id_type, 'cuit') AS owner_tax_id_type
      INTO taker
      FROM wallet_accounts a
      LEFT JOIN users u ON a.owner_type = 'USER' AND u.id = a.owner_id
      LEFT JOIN companies c ON a.owner_type = 'COMPANY' AND c.id = a.owner_id
     WHERE a.id = w.account_id;
    IF v_return THEN
      -- The rail has paid: a return is booked whatever the account's state. No money lands in a closed account
      -- (decision 0053): a DELETED account's goes to UNCLAIMED_RETURNS; any other account is credited (decision
      -- 0062).
      v_unclaimed := taker.status = 'DELETED';
    ELSE
      SELECT a.id, a.app_id, a.status, a.owner_type, a.owner_id, a.cvu,
             coalesce(u.first_name || ' ' || u.last_name, c.legal_name) AS owner_name,
             coalesce(u.tax_id, c.tax_value) AS owner_tax_id, coalesce(u.tax_id_type, 'cuit') AS owner_tax_id_type
        INTO giver
        FROM wallet_accounts a
        LEFT JOIN users u ON a.owner_type = 'USER' AND u.id = a.owner_id
        LEFT JOIN companies c ON a.owner_type = 'COMPANY' AND c.id = a.owner_id
       WHERE a.id = d.account_id;
      -- With a user token, only the owner of the account that gives back, as read here: under the ledger lock, so
      -- an owner change that held the lock is seen, and the answer names the owner that was checked.
      IF v_subject IS NOT NULL AND giver.owner_id <> v_subject THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'FORBIDDEN',
          'message', 'only the owner of the account that received the transfer can give it back');
        EXIT checks;
      END IF;
      IF giver.status <> 'ACTIVE' THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
          'message', 'the account is ' || giver.status);
        EXIT checks;
      END IF;
      IF taker.status <> 'ACTIVE' THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
          'message', 'the receiving account cannot receive money');
        EXIT checks;
      END IF;
      IF v_balance < v_amount THEN
        v_refusal := jsonb_build_object('code', 'WT400', 'path', 'amount', 'type', 'invalid',
          'message', 'insufficient funds: the available balance does not cover the amount');
        EXIT checks;
      END IF;
    END IF;
  END checks;

  IF v_refusal IS NOT NULL THEN
    -- A key already used wins over the refusal (a twin that committed first answers); the raise below rolls
    -- this claim back, so a refusal writes nothing.
    IF v_key IS NOT NULL AND v_app IS NOT NULL THEN
      INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES (v_app, v_key, v_hash) ON CONFLICT DO NOTHING;
      IF NOT FOUND THEN
        v_answer := wallet_key_answer(v_app, v_key, v_hash);
        IF v_answer ? 'replay' THEN
          RETURN v_answer;
        ELSIF v_answer ? 'refused' THEN
          v_refusal := coalesce(v_reused, v_answer->'refused');
        END IF;
      END IF;
    END IF;
    PERFORM wallet_refuse(v_refusal->>'code', v_refusal->>'path', v_refusal->>'type', v_refusal->>'message');
  END IF;

  v_created := now()::timestamp(3) with time zone; -- what created_at (timestamptz(3), default now()) stores
  IF v_return THEN
    v_row := jsonb_build_object(
      'id', v_rd, 'clearing_id', NULL, 'movement_type', 'DEPOSIT', 'status', 'ACREDITADO', 'route', 'EXTERNAL',
      'counterparty_name', w.counterparty_name, 'counterparty_tax_id', w.counterparty_tax_id,
      'counterparty_identifier_type', w.counterparty_identifier_type,
      'counterparty_identifier', w.counterparty_identifier, 'counterparty_account_id', NULL,
      'amount', v_amount::text, 'currency', w.currency, 'fees', '0', 'taxes', '0', 'concept', w.concept,
      'summary', NULL, 'description', p->>'reason', 'created_at', v_created, 'owner_type', taker.owner_type,
      'owner_id', taker.owner_id, 'cvu', taker.cvu, 'owner_name', taker.owner_name,
      'owner_tax_id', taker.owner_tax_id, 'owner_tax_id_type', taker.owner_tax_id_type,
      'counterparty_owner_id', NULL, 'reversal_of', w.id);
  ELSE
    v_row := jsonb_build_object(
      'id', v_rw, 'clearing_id', NULL, 'movement_type', 'WITHDRAW', 'status', 'ACREDITADO', 'route', 'INTERNAL',
      'counterparty_name', d.counterparty_name, 'counterparty_tax_id', d.counterparty_tax_id,
      'counterparty_identifier_type', d.counterparty_identifier_type,
      'counterparty_identifier', d.counterparty_identifier, 'counterparty_account_id', taker.id,
      'amount', v_amount::text, 'currency', w.currency, 'fees', '0', 'taxes', '0', 'concept', w.concept,
      'summary', NULL, 'description', p->>'reason', 'created_at', v_created, 'owner_type', giver.owner_type,
      'owner_id', giver.owner_id, 'cvu', giver.cvu, 'owner_name', giver.owner_name,
      'owner_tax_id', giver.owner_tax_id, 'owner_tax_id_type', giver.owner_tax_id_type,
      'counterparty_owner_id', taker.owner_id, 'reversal_of', d.id);
  END IF;

  -- The key's claim, with its answer: the first write.
  IF v_key IS NOT NULL THEN
    INSERT INTO idempotency_keys (app_id, key, request_hash, response_status, response_body)
    VALUES (v_app, v_key, v_hash, 201, v_row) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
      v_answer := wallet_key_answer(v_app, v_key, v_hash);
      IF v_answer ? 'replay' THEN
        RETURN v_answer;
      ELSIF v_answer ? 'refused' THEN
        v_refusal := coalesce(v_reused, v_answer->'refused');
        PERFORM wallet_refuse(v_refusal->>'code', v_refusal->>'path', v_refusal->>'type', v_refusal->>'message');
      END IF;
      v_unanswered := true;
    END IF;
  END IF;

  IF v_return THEN
    PERFORM ledger_post(taker.app_id, 'TRANSFER_RETURN', v_rd::text, p->>'reason', p->>'actor',
      ARRAY[ledger_system_account('SETTLEMENT', w.currency),
            CASE WHEN v_unclaimed THEN ledger_system_account('UNCLAIMED_RETURNS', w.currency) ELSE taker.id END],
      ARRAY[-v_amount, v_amount], w.currency);
    INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name,
           counterparty_tax_id, counterparty_identifier_type, counterparty_identifier, counterparty_branch,
           counterparty_account_id, linked_transfer_id, amount, currency, fees, taxes, concept, summary, description,
           reversal_of)
    VALUES (v_rd, taker.app_id, taker.id, 'DEPOSIT', 'ACREDITADO', 'EXTERNAL', w.counterparty_name,
            w.counterparty_tax_id, w.counterparty_identifier_type, w.counterparty_identifier, w.counterparty_branch,
            NULL, NULL, v_amount, w.currency, 0, 0, w.concept, NULL, p->>'reason', w.id);
    IF v_unclaimed THEN
      INSERT INTO unclaimed_returns (transfer_id) VALUES (v_rd);
    END IF;
  ELSE
    PERFORM ledger_post(giver.app_id, 'TRANSFER_REVERSAL', v_rw::text, p->>'reason', p->>'actor',
      ARRAY[giver.id, taker.id], ARRAY[-v_amount, v_amount], w.currency);
    INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name,
           counterparty_tax_id, counterparty_identifier_type, counterparty_identifier, counterparty_branch,
           counterparty_account_id, linked_transfer_id, amount, currency, fees, taxes, concept, summary, description,
           reversal_of)
    VALUES (v_rw, giver.app_id, giver.id, 'WITHDRAW', 'ACREDITADO', 'INTERNAL', d.counterparty_name,
            d.counterparty_tax_id, d.counterparty_identifier_type, d.counterparty_identifier, NULL, taker.id, v_rd,
            v_amount, w.currency, 0, 0, w.concept, NULL, p->>'reason', d.id),
           (v_rd, taker.app_id, taker.id, 'DEPOSIT', 'ACREDITADO', 'INTERNAL', w.counterparty_name,
            w.counterparty_tax_id, w.counterparty_identifier_type, w.counterparty_identifier, NULL, giver.id, v_rw,
            v_amount, w.currency, 0, 0, w.concept, NULL, p->>'reason', w.id);
  END IF;

  -- A transfer_update for each new row, to the application of its account (as wallet_write_internal writes it),
  -- its subject the original row of that account (reversal_of): delivered after the original's own events.
  INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
  SELECT uuidv7(), x.app_id, 'transfer_update', x.reversal_of::text,
         jsonb_build_object('event', 'transfer_update', 'timestamp', floor(extract(epoch FROM now()))::bigint,
           'data', jsonb_build_object('uuid', x.id, 'movementType', x.movement_type,
                                      'backStatus', 'PENDING', 'newStatus', 'ACCEPTED')),
         'pending', now()
    FROM transfers x WHERE x.id IN (v_rw, v_rd) ORDER BY x.movement_type DESC;
  IF v_return THEN
    PERFORM audit_append(taker.app_id, p->>'auditActor', p->>'route', 'transfer', v_rd::text, 'ACREDITADO', p->>'requestId');
  ELSE
    PERFORM audit_append(giver.app_id, p->>'auditActor', p->>'route', 'transfer', v_rw::text, 'ACREDITADO', p->>'requestId');
  END IF;

  IF v_unanswered THEN
    UPDATE idempotency_keys SET response_status = 201, response_body = v_row WHERE app_id = v_app AND key = v_key;
  END IF;
  RETURN jsonb_build_object('row', v_row);
END
$function$
