-- Requests counted per minute for callers that no credential names: a client address (its /64
-- for IPv6) on the sandbox's 3-D Secure page and the signed-out dashboard, a dashboard account.
CREATE TABLE throttle_counters (
  subject text NOT NULL CHECK (length(subject) BETWEEN 1 AND 200),
  category text NOT NULL,
  window_start timestamptz NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (subject, category, window_start)
);

-- An authentication attempt is counted before it is checked and forgotten only if it
-- succeeded: each row needs a name of its own for that.
ALTER TABLE auth_failures ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
