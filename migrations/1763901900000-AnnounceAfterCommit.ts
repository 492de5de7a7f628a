import type { MigrationInterface, QueryRunner } from 'typeorm';
import { loadFunction } from './sql.js';

/**
 * Outbox events are announced after their transaction commits, not by a NOTIFY inside it
 * (docs/decisions/0039-announce-after-commit.md). A transaction that NOTIFYs takes one lock for the whole cluster
 * at commit and holds it until its commit record is flushed, so every transfer group (each writes the receivers'
 * transfer_update events) committed one after the other, each waiting for the previous one's WAL flush: the
 * group commit's second call never overlapped the first's commit.
 * - the trigger `webhook_events_notify` and its function `notify_webhook_event` are dropped;
 * - `wallet_internal_write` gains `event_id`: `wallet_transfer_try` chooses the receiver's event id, answers it
 *   (`events`) and `wallet_write_internal` writes the event with it; `wallet_reverse_transfer` answers the ids of
 *   the events it writes. The callers (TransferBatcher, ReversalsService) announce them once the call returned,
 *   and every other producer through `WebhooksService.emit`, when the TypeORM transaction commits.
 * down puts the trigger and the previous definitions back.
 */
export class AnnounceAfterCommit1763901900000 implements MigrationInterface {
  name = 'AnnounceAfterCommit1763901900000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "webhook_events_notify" ON "webhook_events"`);
    await queryRunner.query(`DROP FUNCTION "notify_webhook_event"()`);
    await queryRunner.query(`ALTER TYPE "wallet_internal_write" ADD ATTRIBUTE "event_id" uuid`);
    await queryRunner.query(
      loadFunction('wallet_transfer_try', '2a5e53abfcd636951fa5771249d2101934cf3863e45cb112c529194fad66de9c'),
    );
    await queryRunner.query(
      loadFunction(
        'wallet_write_internal',
        'c8795521ba46748cc6dc16120101881cbf505274bd5c01ee028cd7c59e63b2d5',
      ),
    );
    await queryRunner.query(
      loadFunction(
        'wallet_reverse_transfer',
        '4bcd0999cbddc73f7d453f561f6b34a723f4a90e32e17757a4cb9ab03ef24e59',
      ),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(TRANSFER_TRY_BEFORE);
    await queryRunner.query(WRITE_INTERNAL_BEFORE);
    await queryRunner.query(REVERSE_TRANSFER_BEFORE);
    await queryRunner.query(`ALTER TYPE "wallet_internal_write" DROP ATTRIBUTE "event_id"`);
    await queryRunner.query(NOTIFY_BEFORE);
    await queryRunner.query(
      `CREATE TRIGGER "webhook_events_notify" AFTER INSERT ON "webhook_events"
       FOR EACH ROW EXECUTE FUNCTION "notify_webhook_event"()`,
    );
  }
}

const TRANSFER_TRY_BEFORE = `-- One transfer of POST /wallet/transactions, checked and applied: the request p is a TransferRequest
-- (src/modules/transfers/transfer-function.contract.ts). result is {row, submit} (a new transfer),
-- {replay} (its Idempotency-Key's stored answer) or {refused} (code, path, type, message); write holds an
-- internal transfer's rows for wallet_write_internal.
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
  v_id uuid := gen_random_uuid();
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
    v_deposit := gen_random_uuid();
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
    write := ROW(v_id, v_deposit, gen_random_uuid(), acc.app_id, recv.app_id, acc.id, recv.id, v_cp->>'name',
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

const WRITE_INTERNAL_BEFORE = `-- Writes the rows of internal transfers already checked and applied by wallet_transfer_try (type
-- wallet_internal_write, migrations/1763900900000-GroupWrites.ts), one INSERT per table for the whole array, in
-- its order: each transfer's journal entry and postings (the tax applies to debit and credit: the receiver pays
-- it on what it receives), the sender's WITHDRAW and the receiver's own DEPOSIT (docs/decisions/0013), the
-- receiver's application's transfer_update event, and the sender's application's audit record of each transfer
-- (as audit_append writes it; one INSERT for the group, decision 0032). No history rows: a transfer's creation
-- (COMMITING → its first status) is implied by its row (view transfer_status_path, decision 0035).
-- Guarantees: the same rows, in the same order, as writing the transfers one by one
-- (test/transfers-function-equivalence.e2e-spec.ts); each entry balances (checked again at commit by
-- ledger_entry_balances). Balances and operated amounts are not written here (wallet_transfer_try did).
CREATE OR REPLACE FUNCTION public.wallet_write_internal(p wallet_internal_write[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO journal_entries (id, app_id, kind, reference, description, actor)
  SELECT w.entry_id, w.app_id, 'INTERNAL_TRANSFER', w.id::text, NULL, w.actor
    FROM unnest(p) WITH ORDINALITY AS w ORDER BY w.ordinality;
  INSERT INTO postings (entry_id, account_id, amount, currency)
  SELECT w.entry_id, t.account_id, t.amount, w.currency
    FROM unnest(p) WITH ORDINALITY AS w
    CROSS JOIN LATERAL (VALUES (1, w.account_id, -w.total), (2, w.recv_id, w.amount - w.tax),
                               (3, w.fee_account, w.fee), (4, w.tax_account, w.tax + w.tax)) AS t(n, account_id, amount)
   WHERE t.amount <> 0
   ORDER BY w.ordinality, t.n;
  INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name, counterparty_tax_id,
         counterparty_identifier_type, counterparty_identifier, counterparty_branch, counterparty_account_id,
         linked_transfer_id, amount, currency, fees, taxes, concept, summary)
  SELECT t.*
    FROM unnest(p) WITH ORDINALITY AS w
    CROSS JOIN LATERAL (VALUES
      (w.id, w.app_id, w.account_id, 'WITHDRAW', 'ACREDITADO', 'INTERNAL', w.cp_name, w.cp_tax_id,
       w.cp_identifier_type, w.cp_identifier, w.cp_branch, w.recv_id, w.deposit_id, w.amount, w.currency, w.fee,
       w.tax, w.concept, w.summary),
      (w.deposit_id, w.recv_app_id, w.recv_id, 'DEPOSIT', 'ACREDITADO', 'INTERNAL', coalesce(w.owner_name, ''),
       coalesce(w.owner_tax_id, ''), 'CVU', w.cvu, NULL, w.account_id, w.id, w.amount, w.currency, 0, w.tax,
       w.concept, w.summary)) AS t
   ORDER BY w.ordinality;
  INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
  SELECT gen_random_uuid(), w.recv_app_id, 'transfer_update', w.deposit_id::text,
         jsonb_build_object('event', 'transfer_update', 'timestamp', floor(extract(epoch FROM now()))::bigint,
           'data', jsonb_build_object('uuid', w.deposit_id, 'movementType', 'DEPOSIT',
                                      'backStatus', 'PENDING', 'newStatus', 'ACCEPTED')),
         'pending', now()
    FROM unnest(p) WITH ORDINALITY AS w ORDER BY w.ordinality;
  INSERT INTO audit_records (app_id, principal_type, principal, action, resource_type, resource_id, outcome,
         request_id)
  SELECT w.app_id, split_part(w.actor, ':', 1), substr(w.actor, strpos(w.actor, ':') + 1),
         coalesce(w.action, 'unknown'), 'transfer', w.id::text, 'ACREDITADO', w.request_id
    FROM unnest(p) WITH ORDINALITY AS w ORDER BY w.ordinality;
END
$function$

`;

const REVERSE_TRANSFER_BEFORE = `-- Money back along a settled transfer (docs/decisions/0031-reversals.md): p is a ReversalRequest
-- (src/modules/transfers/transfer-function.contract.ts), the answer a ReversalResult: {row} (the new transfer as
-- the caller sees it, reversal_of included) or {replay} (its Idempotency-Key's stored answer). Two kinds:
-- - 'reversal' (POST /wallet/transactions/{uuid}/reversals): an INTERNAL transfer, ACREDITADO, addressed by either
--   of its two rows by the application of the account that received it; the receiver's new WITHDRAW and the
--   original sender's new DEPOSIT (INTERNAL, ACREDITADO, linked to each other), each with reversal_of = the
--   original row of its own account; an entry TRANSFER_REVERSAL (receiver -amount, sender +amount); a
--   transfer_update for each application;
-- - 'return' (the rail gives back an EXTERNAL WITHDRAW that was ACREDITADO; CLI \`transfers return\`): the sender's
--   new DEPOSIT (EXTERNAL, ACREDITADO, reversal_of = the WITHDRAW); an entry TRANSFER_RETURN (SETTLEMENT -amount,
--   sender +amount); a transfer_update for the sender's application.
-- Guarantees:
-- - the original pair's transfer rows are locked (FOR UPDATE, id order), then the ledger rows (id order, as
--   wallet_transfer_try locks them), so reversals never deadlock with transfers or the clearing steps, and
--   concurrent reversals of one transfer run one after the other;
-- - the reversed total (the amounts of the rows whose reversal_of is the original WITHDRAW) never exceeds the
--   original amount; the amount defaults to what is left;
-- - every check that can refuse (the transfer: found in scope, not a reversal, ACREDITADO, of the kind asked;
--   the amount; both accounts ACTIVE; the funds of the account that gives back) runs before the first write; a
--   refusal is raised with wallet_refuse (WT400/WT403, WT404 for an unknown transfer), so nothing is written;
-- - no fee, no tax, no operated amounts, no limit check: a reversal undoes money that was already counted;
-- - the Idempotency-Key (already in the reversal namespace, see the contract) is claimed with its answer as in
--   wallet_transfer_try: an already used key wins over a refusal; another body under the same key is refused.
-- - one audit record (audit_append, docs/decisions/0032-audit-trail.md) in the same transaction: the new row of
--   the account that gave the money (the caller's WITHDRAW), or the returned DEPOSIT; none for a refusal or a
--   replay. actor goes on the journal entry, auditActor/route/requestId on the audit record.
-- - no history rows: the new rows' creation (COMMITING → ACREDITADO) is implied by them (transfer_status_path,
--   decision 0035).
CREATE OR REPLACE FUNCTION public.wallet_reverse_transfer(p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_return boolean := p->>'kind' = 'return';
  v_app uuid := (p->>'appId')::uuid;
  v_key text := p->>'idempotencyKey';
  v_hash text := p->>'requestHash';
  v_id uuid := (p->>'transferId')::uuid;
  v_amount numeric := (p->>'amount')::numeric;
  v_linked uuid;
  v_units integer;
  v_reversed numeric;
  v_left numeric;
  v_balance numeric;
  v_rw uuid := gen_random_uuid();
  v_rd uuid := gen_random_uuid();
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
    SELECT x.linked_transfer_id INTO v_linked FROM transfers x WHERE x.id = v_id;
    IF NOT FOUND THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
    END IF;
    -- The original pair, locked in id order (linked_transfer_id never changes), then read under the lock.
    PERFORM 1 FROM transfers x WHERE x.id IN (v_id, v_linked) ORDER BY x.id FOR UPDATE;
    SELECT * INTO t FROM transfers x WHERE x.id = v_id;
    IF NOT v_return AND t.app_id <> v_app THEN
      v_refusal := jsonb_build_object('code', 'WT404', 'path', v_id, 'type', 'notfound', 'message', 'Transfer not found');
      EXIT checks;
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

    -- The accounts: the one that gives back (the receiver; none for a return) and the original sender.
    SELECT a.id, a.app_id, a.status, a.owner_type, a.owner_id, a.cvu,
           coalesce(u.first_name || ' ' || u.last_name, c.legal_name) AS owner_name,
           coalesce(u.tax_id, c.tax_value) AS owner_tax_id, coalesce(u.tax_id_type, 'cuit') AS owner_tax_id_type
      INTO taker
      FROM wallet_accounts a
      LEFT JOIN users u ON a.owner_type = 'USER' AND u.id = a.owner_id
      LEFT JOIN companies c ON a.owner_type = 'COMPANY' AND c.id = a.owner_id
     WHERE a.id = w.account_id;
    IF v_return THEN
      PERFORM 1 FROM ledger_accounts l WHERE l.id = taker.id FOR UPDATE;
      IF taker.status <> 'ACTIVE' THEN
        v_refusal := jsonb_build_object('code', 'WT403', 'path', '', 'type', 'INVALID_STATE',
          'message', 'the account is ' || taker.status);
        EXIT checks;
      END IF;
    ELSE
      SELECT a.id, a.app_id, a.status, a.owner_type, a.owner_id, a.cvu,
             coalesce(u.first_name || ' ' || u.last_name, c.legal_name) AS owner_name,
             coalesce(u.tax_id, c.tax_value) AS owner_tax_id, coalesce(u.tax_id_type, 'cuit') AS owner_tax_id_type
        INTO giver
        FROM wallet_accounts a
        LEFT JOIN users u ON a.owner_type = 'USER' AND u.id = a.owner_id
        LEFT JOIN companies c ON a.owner_type = 'COMPANY' AND c.id = a.owner_id
       WHERE a.id = d.account_id;
      SELECT max(l.balance) FILTER (WHERE l.id = giver.id) INTO v_balance
        FROM (SELECT id, balance FROM ledger_accounts WHERE id IN (giver.id, taker.id) ORDER BY id FOR UPDATE) l;
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
    IF v_key IS NOT NULL THEN
      INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES (v_app, v_key, v_hash) ON CONFLICT DO NOTHING;
      IF NOT FOUND THEN
        v_answer := wallet_key_answer(v_app, v_key, v_hash);
        IF v_answer ? 'replay' THEN
          RETURN v_answer;
        END IF;
        v_refusal := coalesce(v_answer->'refused', v_refusal);
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
        v_refusal := v_answer->'refused';
        PERFORM wallet_refuse(v_refusal->>'code', v_refusal->>'path', v_refusal->>'type', v_refusal->>'message');
      END IF;
      v_unanswered := true;
    END IF;
  END IF;

  IF v_return THEN
    PERFORM ledger_post(taker.app_id, 'TRANSFER_RETURN', v_rd::text, p->>'reason', p->>'actor',
      ARRAY[ledger_system_account('SETTLEMENT', w.currency), taker.id], ARRAY[-v_amount, v_amount], w.currency);
    INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name,
           counterparty_tax_id, counterparty_identifier_type, counterparty_identifier, counterparty_branch,
           counterparty_account_id, linked_transfer_id, amount, currency, fees, taxes, concept, summary, description,
           reversal_of)
    VALUES (v_rd, taker.app_id, taker.id, 'DEPOSIT', 'ACREDITADO', 'EXTERNAL', w.counterparty_name,
            w.counterparty_tax_id, w.counterparty_identifier_type, w.counterparty_identifier, w.counterparty_branch,
            NULL, NULL, v_amount, w.currency, 0, 0, w.concept, NULL, p->>'reason', w.id);
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

  -- A transfer_update for each new row, to the application of its account (as wallet_write_internal writes it).
  INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
  SELECT gen_random_uuid(), x.app_id, 'transfer_update', x.id::text,
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
`;

const NOTIFY_BEFORE = `-- Trigger function of webhook_events_notify (AFTER INSERT ON webhook_events, for each row;
-- migrations/1763900100000-WebhookOutbox.ts): NOTIFY webhook_events '<id>.<generation>'.
-- Guarantees: the notification is delivered when the writing transaction commits, and only then, so the relay
-- (src/modules/webhooks/webhook-relay.ts) never enqueues an event that was rolled back.
CREATE OR REPLACE FUNCTION public.notify_webhook_event()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        PERFORM pg_notify('webhook_events', NEW.id::text || '.' || NEW.generation::text);
        RETURN NEW;
      END
      $function$

`;
