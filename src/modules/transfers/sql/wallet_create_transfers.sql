-- A group commit of POST /wallet/transactions (TransferBatcher, docs/decisions/0015 and 0021):
-- SELECT wallet_create_transfers($1::jsonb) with an array of TransferRequest; the answer is an array, in the same
-- order, of TransferResult or {refused} (TransferGroupResult, src/modules/transfers/transfer-function.contract.ts).
-- Guarantees: first every ledger row the group may touch (senders and the live accounts behind the
-- counterparty numbers) is locked in id order (index probes: its cost grows with the group, not the accounts), so concurrent groups never deadlock on them; then each transfer
-- is checked and applied on its own, in arrival order, against the balances and limits the earlier ones left
-- (the same Idempotency-Key twice replays the first's answer); a refusal answers only its own request and
-- writes nothing; the internal transfers' rows are written once for the group (wallet_write_internal). One
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
  FOR v_item IN SELECT e FROM jsonb_array_elements(p) AS e LOOP
    v_try := wallet_transfer_try(v_item, v_locked, false);
    v_results := v_results || v_try.result;
    IF (v_try.write).id IS NOT NULL THEN
      v_writes := v_writes || v_try.write;
    END IF;
  END LOOP;
  IF cardinality(v_writes) > 0 THEN
    PERFORM wallet_write_internal(v_writes);
  END IF;
  RETURN to_jsonb(v_results);
END
$function$

