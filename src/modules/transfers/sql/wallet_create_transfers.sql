-- A group commit of POST /wallet/transactions (TransferBatcher, docs/decisions/0015 and 0021):
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

