-- Records a batch of webhook attempts (WebhookDeliveryService, docs/decisions/0018 and 0036), in one statement and
-- one commit: p is a JSON array of {id, attempt, url, started_ms, duration_ms, status_code, outcome, error,
-- retry_delay_ms}. Answers the jobs to add: the retries (delay_ms > 0) and the woken events (delay_ms 0).
-- Guarantees:
-- - one webhook_attempts row per attempt; called again (after a connection was lost at commit) it adds none twice
--   (the same event, attempt and start time: ON CONFLICT on UQ_webhook_attempts_event_attempt_start);
-- - the event's outcome (delivered; failed for good; or pending with the next attempt due after its delay and a
--   new generation), only while this attempt still holds the event (status pending, the lease taken, the
--   attempt number unchanged), with last_attempt_at the attempt's start (its row's started_at; the claim does
--   not set it, so a claim given back unsent leaves it as it was: decision 0095): a worker whose lease ran out
--   while another took the event over records its attempt but leaves the event to the other; a repeated call
--   changes nothing;
-- - for each event done for good, the next pending event of its subject is scheduled (the same snapshot still
--   shows the finished events pending, hence p.id <> d.id).
-- Sequential scans are off while it runs: each input row is one primary-key probe whatever the statistics said
-- when the session planned it (planned during a burst's first batches, a hash join over a scan of the whole
-- outbox ran for every batch after; decision 0036).
CREATE OR REPLACE FUNCTION public.webhook_record(p jsonb)
 RETURNS TABLE(id uuid, generation integer, delay_ms integer)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH input AS (
    SELECT i.*, 'pending'::text AS pending FROM jsonb_to_recordset(p)
        AS i(id uuid, attempt int, url text, started_ms float8, duration_ms int, status_code int, outcome text,
             error text, retry_delay_ms int)
  ), done AS (
    UPDATE webhook_events e
       SET status = CASE WHEN i.outcome = 'delivered' THEN 'delivered'
                         WHEN i.retry_delay_ms IS NULL THEN 'failed' ELSE 'pending' END,
           delivered_at = CASE WHEN i.outcome = 'delivered' THEN now() END,
           last_attempt_at = to_timestamp(i.started_ms / 1000),
           lease_until = NULL,
           next_attempt_at = CASE WHEN i.outcome = 'failed' AND i.retry_delay_ms IS NOT NULL
                                  THEN now() + i.retry_delay_ms * interval '1 millisecond' END,
           last_error = i.error,
           generation = e.generation + CASE WHEN i.outcome = 'failed' AND i.retry_delay_ms IS NOT NULL
                                            THEN 1 ELSE 0 END
      FROM input i
     WHERE e.id = i.id AND e.status = i.pending AND e.lease_until IS NOT NULL AND e.attempts = i.attempt
    RETURNING e.id, e.app_id, e.subject, e.status, e.generation, i.retry_delay_ms
  ), attempts AS (
    INSERT INTO webhook_attempts (event_id, attempt, url, started_at, duration_ms, status_code, outcome, error)
    SELECT i.id, i.attempt, i.url, to_timestamp(i.started_ms / 1000), i.duration_ms, i.status_code, i.outcome,
           i.error
      FROM input i
    ON CONFLICT (event_id, attempt, started_at) DO NOTHING
  ), woken AS (
    UPDATE webhook_events n SET next_attempt_at = now(), generation = n.generation + 1
      FROM (SELECT DISTINCT nx.id
              FROM done d
             CROSS JOIN LATERAL (
               SELECT p.id FROM webhook_events p
                WHERE p.app_id = d.app_id AND p.subject = d.subject AND p.status = 'pending' AND p.id <> d.id
                ORDER BY p.seq LIMIT 1) nx
             WHERE d.status <> 'pending' AND d.subject IS NOT NULL) w
     WHERE n.id = w.id AND n.status = 'pending'
       AND (n.lease_until IS NULL OR n.lease_until < now())
       AND (n.next_attempt_at IS NULL OR n.next_attempt_at <= now())
    RETURNING n.id, n.generation
  )
  SELECT id, generation, retry_delay_ms AS delay_ms FROM done WHERE status = 'pending'
  UNION ALL
  SELECT id, generation, 0 FROM woken;
END
$function$
