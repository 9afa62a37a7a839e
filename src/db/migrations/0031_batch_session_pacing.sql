-- A batch sent from the dashboard names no credential: its items are paced under the subject the
-- dashboard's own requests of the application and mode are counted under (throttle_counters).
ALTER TABLE batches ADD COLUMN rate_limit_subject text
  CHECK (length(rate_limit_subject) BETWEEN 1 AND 200);
ALTER TABLE batches ADD CONSTRAINT batches_paced_once
  CHECK (credential_id IS NULL OR rate_limit_subject IS NULL);
