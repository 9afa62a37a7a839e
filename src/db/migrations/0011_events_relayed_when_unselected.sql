-- An event that no subscription selects when it is written is relayed as it is written (issue
-- 12): the relay has nothing to start for it, so it is neither claimed nor updated later, and
-- its commit sends no NOTIFY (a notifying commit takes Postgres' notification lock). The test is
-- the relay's own (src/db/webhook-deliveries.ts `relayEventBatch`): an active subscription of the
-- application and mode that selects the type and was created no later than the event. A
-- subscription that becomes visible (committed, enabled or widened) after the event was written
-- does not receive it: a subscription receives the events that happen after it was saved.

CREATE FUNCTION events_relayed_unless_selected() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.relayed_at IS NULL AND NOT EXISTS (
    SELECT 1 FROM webhook_subscriptions s
    WHERE s.application_id = NEW.application_id AND s.mode = NEW.mode
      AND s.is_active AND NEW.type = ANY (s.events) AND s.created_at <= NEW.created_at
  ) THEN
    NEW.relayed_at := now();
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER events_relayed_unless_selected BEFORE INSERT ON events
  FOR EACH ROW EXECUTE FUNCTION events_relayed_unless_selected();

-- Only an event left for the relay wakes it (notifications within a transaction fold into one).
DROP TRIGGER events_notify_webhook_relay ON events;
CREATE TRIGGER events_notify_webhook_relay AFTER INSERT ON events
  FOR EACH ROW WHEN (NEW.relayed_at IS NULL) EXECUTE FUNCTION notify_webhook_events();
