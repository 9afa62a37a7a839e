-- Merchant metadata on users and wallets (docs/api.md, "Metadata"). The API checks the limits first and answers which key breaks them; this CHECK is
-- what holds them whatever writes the row (a merge racing another one included).
CREATE FUNCTION merchant_metadata_valid(m jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(m) <> 'object' THEN false ELSE (
    SELECT count(*) <= 50 AND coalesce(bool_and(
      length(key) BETWEEN 1 AND 40 AND position('[' IN key) = 0 AND position(']' IN key) = 0
      AND jsonb_typeof(value) = 'string' AND length(value #>> '{}') <= 500), true)
    FROM jsonb_each(m)) END
$$;

ALTER TABLE users ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb
  CONSTRAINT users_metadata_valid CHECK (merchant_metadata_valid(metadata));
ALTER TABLE wallets ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb
  CONSTRAINT wallets_metadata_valid CHECK (merchant_metadata_valid(metadata));
