-- Claims a batch of webhook deliveries (WebhookDeliveryService, docs/decisions/0018 and 0036): p_ids is a comma
-- list of event ids, p_lease_ms the lease. Each due, pending event that is first of its subject and not held by
-- another worker gets a lease and its attempt number bumped, and comes back with what delivery needs (payload,
-- the application's URL, and its id, which the signature names: decision 0076); the others that wait for an
-- earlier event of their subject are parked (next_attempt_at NULL) until that one is done. It leaves
-- last_attempt_at alone: a claim may be given back unsent, and the attempt's record (webhook_record) sets it to
-- the attempt's start (decision 0095).
-- Guarantees: every data-modifying CTE runs on one snapshot, and the claimed and parked sets are disjoint by the
-- EXISTS / NOT EXISTS on the earlier event; called again after its commit was lost with the connection, it claims
-- nothing (the leases are taken): those deliveries skip, and the events go out again once the leases expire (the
-- sweeper), as after a killed worker. The rows it may change (pending, not leased) are locked first, in id
-- order, and only they are changed: concurrent claims of overlapping batches (a worker runs two at once, every
-- worker its own) wait for each other instead of deadlocking, whatever order their ids came in. Sequential scans
-- are off while it runs: each input id is one primary-key probe whatever the statistics said when the session
-- planned it (a burst makes them wrong; decision 0036).
-- Its commit does not wait for the WAL flush (synchronous_commit off for the transaction it runs in, which the
-- worker gives it alone; decision 0051): a lease is not worth an fsync on the way to the receiver. Should the
-- server crash before the WAL holding the claim is flushed, the claim is forgotten: the delivery's record is
-- refused by its fence on the attempt number, the event stays pending and the sweeper enqueues it again
-- (delivered at least once, as after a killed worker). The record (webhook_record), which is what says
-- delivered, waits for the flush as every other commit, and its flush makes the claim before it durable too.
CREATE OR REPLACE FUNCTION public.webhook_claim_for_delivery(p_ids text, p_lease_ms integer)
 RETURNS TABLE(id uuid, subject text, payload jsonb, attempts integer, url text, app_id uuid)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
  SET LOCAL synchronous_commit TO off;
  RETURN QUERY
  WITH input AS (
    SELECT DISTINCT unnest(string_to_array(p_ids, ','))::uuid AS id, 'pending'::text AS pending
  ), locked AS MATERIALIZED (
    SELECT e.id, i.pending FROM webhook_events e JOIN input i ON e.id = i.id
     WHERE e.status = i.pending AND (e.lease_until IS NULL OR e.lease_until < now())
     ORDER BY e.id FOR UPDATE OF e
  ), claimed AS (
    UPDATE webhook_events e
       SET lease_until = now() + (p_lease_ms * interval '1 millisecond'),
           attempts = attempts + 1
      FROM locked i
     WHERE e.id = i.id AND e.status = i.pending
       AND (e.lease_until IS NULL OR e.lease_until < now())
       AND (e.next_attempt_at IS NULL OR e.next_attempt_at <= now() + interval '50 milliseconds')
       AND NOT EXISTS (
         SELECT 1 FROM webhook_events p
          WHERE p.app_id = e.app_id AND p.subject = e.subject AND p.status = 'pending' AND p.seq < e.seq
         OFFSET 0)
    RETURNING e.id, e.app_id, e.subject, e.payload, e.attempts
  ), parked AS (
    UPDATE webhook_events e SET next_attempt_at = NULL
      FROM locked i
     WHERE e.id = i.id AND e.status = i.pending
       AND (e.lease_until IS NULL OR e.lease_until < now())
       AND EXISTS (
         SELECT 1 FROM webhook_events p
          WHERE p.app_id = e.app_id AND p.subject = e.subject AND p.status = 'pending' AND p.seq < e.seq
         OFFSET 0)
    RETURNING e.id
  )
  SELECT c.id, c.subject, c.payload, c.attempts, a.webhook_url AS url, c.app_id
    FROM claimed c LEFT JOIN applications a ON a.id = c.app_id;
END
$function$
