-- A running `cli webhooks listen` registers here, so that the events of its
-- application and mode notify it even when no subscription selects them (0011 keeps those
-- silent). It refreshes `expires_at` while it runs and deletes its row when it stops; the row of
-- a killed command expires, and the maintenance schedule deletes it.
CREATE TABLE event_listeners (
  id uuid PRIMARY KEY,
  application_id uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  mode text NOT NULL CHECK (mode IN ('test', 'live')),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX event_listeners_scope_idx ON event_listeners (application_id, mode, expires_at);

-- The listeners' notification comes from the BEFORE trigger that already runs for every event:
-- without listeners an event costs one more index probe of an empty table, not a second trigger.
-- Its own channel, carrying `application_id/mode`, so the relay is not woken for these events
-- and a listening command wakes only for its own. Sent before the row is written, it may
-- announce a row that conflicts and is skipped; the command then reads nothing new.
CREATE OR REPLACE FUNCTION events_relayed_unless_selected() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.relayed_at IS NULL AND NOT EXISTS (
    SELECT 1 FROM webhook_subscriptions s
    WHERE s.application_id = NEW.application_id AND s.mode = NEW.mode
      AND s.is_active AND NEW.type = ANY (s.events) AND s.created_at <= NEW.created_at
  ) THEN
    NEW.relayed_at := now();
  END IF;
  IF EXISTS (
    SELECT 1 FROM event_listeners l
    WHERE l.application_id = NEW.application_id AND l.mode = NEW.mode AND l.expires_at > now()
  ) THEN
    PERFORM pg_notify('event_listeners', NEW.application_id || '/' || NEW.mode);
  END IF;
  RETURN NEW;
END;
$$;
