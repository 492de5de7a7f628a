-- The single call of POST /wallet/transactions: SELECT wallet_create_transfer($1::jsonb), one statement in
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

