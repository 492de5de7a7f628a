-- The claim as workers from before decision 0076 call it (`SELECT * FROM webhook_claim($1, $2)`): what
-- webhook_claim_for_delivery answers, without the application's id. It keeps its result type so that a worker
-- still running that code goes on claiming through a rolling upgrade: a new result type would fail that
-- worker's prepared statement on every claim ("cached plan must not change result type") until it restarts.
-- It only calls webhook_claim_for_delivery, whose header says what a claim guarantees (lock order, parking,
-- commit without the flush wait, sequential scans off, the lease); it adds nothing of its own. Only an old
-- worker calls it: a later migration drops it (and this file) once no worker from before 0076 can run.
CREATE OR REPLACE FUNCTION public.webhook_claim(p_ids text, p_lease_ms integer)
 RETURNS TABLE(id uuid, subject text, payload jsonb, attempts integer, url text)
 LANGUAGE sql
AS $function$
  SELECT c.id, c.subject, c.payload, c.attempts, c.url FROM public.webhook_claim_for_delivery(p_ids, p_lease_ms) c
$function$
