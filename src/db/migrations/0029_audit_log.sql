-- The audit log (docs/security.md, Audit log): who changed what, written in the same database
-- transaction as the change it records. Append-only: the triggers below refuse UPDATE, DELETE
-- and TRUNCATE, so a row once committed stays as written. No foreign keys: an entry outlives
-- what it names.
CREATE TABLE audit_log (
  id uuid PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  actor_type text NOT NULL
    CHECK (actor_type IN ('dashboard_account', 'admin', 'cli', 'application')),
  actor_id text NOT NULL CHECK (length(actor_id) BETWEEN 1 AND 200),
  actor_name text NOT NULL CHECK (length(actor_name) <= 254),
  action text NOT NULL CHECK (action ~ '^[a-z_]+(\.[a-z_]+)+$'),
  target_type text NOT NULL CHECK (length(target_type) BETWEEN 1 AND 100),
  target_id text CHECK (length(target_id) <= 200),
  ip text CHECK (length(ip) <= 64),
  details jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object'),
  -- Null for a platform-level change (an admin created, an application created).
  application_id uuid,
  mode text CHECK (mode IN ('test', 'live'))
);

-- The list's order is (at, id) newest first; each filter leads an index of its own.
CREATE INDEX audit_log_at_idx ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_application_idx ON audit_log (application_id, at DESC, id DESC);
CREATE INDEX audit_log_action_idx ON audit_log (action, at DESC, id DESC);
CREATE INDEX audit_log_actor_idx ON audit_log (actor_id, at DESC, id DESC);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % is refused', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_log_no_update_or_delete
  BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

CREATE TRIGGER audit_log_no_truncate
  BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
