-- Provider notifications are purged by the maintenance schedule (src/db/maintenance.ts): unmatched
-- ones once the reconciliation stops retrying them, the others after their retention. The purge
-- looks them up by arrival, whatever their outcome.
CREATE INDEX provider_notifications_received_idx ON provider_notifications (received_at);
