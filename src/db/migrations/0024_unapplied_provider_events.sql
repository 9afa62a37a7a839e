-- A signed provider event that should move money but cannot (a dispute on a deposit the engine
-- cannot find, or one it declined) is kept as `unapplied` for an operator, never as `ignored`;
-- the purge keeps it (docs/operations.md, Provider events kept for an operator).
ALTER TABLE provider_notifications DROP CONSTRAINT provider_notifications_outcome_check;
ALTER TABLE provider_notifications ADD CONSTRAINT provider_notifications_outcome_check
  CHECK (outcome IN ('matched', 'unmatched', 'ignored', 'unapplied'));
CREATE INDEX provider_notifications_unapplied_idx
  ON provider_notifications (received_at) WHERE outcome = 'unapplied';
