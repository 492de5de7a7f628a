-- Trigger function of webhook_events_notify (AFTER INSERT ON webhook_events, for each row;
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

