-- What an Idempotency-Key already claimed by (p_app, p_key) answers a request whose canonical hash is p_hash:
-- {refused: …} when the key was used with another request, {replay: <stored row>} when its transfer
-- committed, NULL when the key is claimed but holds no answer yet (its claim is this transaction's own).
-- Guarantees: a key is never answered for a different body; a stored answer is replayed exactly as first
-- given. Called by wallet_create_transfers after its INSERT … ON CONFLICT DO NOTHING waited for a twin in flight.
CREATE OR REPLACE FUNCTION public.wallet_key_answer(p_app uuid, p_key text, p_hash text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
$function$

