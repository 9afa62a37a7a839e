-- The filters and cursor pages of the transaction and user lists (docs/api.md, "Search and
-- cursor pages"). A list reads newest first by (created_at DESC, id DESC), so
-- each index ends in that order and a page or a cursor reads only its own rows.
CREATE INDEX transactions_list_idx
  ON transactions (application_id, mode, created_at DESC, id DESC);
CREATE INDEX transactions_list_status_idx
  ON transactions (application_id, mode, status, created_at DESC, id DESC);
CREATE INDEX transactions_list_type_idx
  ON transactions (application_id, mode, transaction_type, created_at DESC, id DESC);

-- A wallet's transactions, sender or recipient, newest first; these supersede the plain indexes.
CREATE INDEX transactions_wallet_list_idx
  ON transactions (wallet_id, created_at DESC, id DESC) WHERE wallet_id IS NOT NULL;
CREATE INDEX transactions_recipient_list_idx
  ON transactions (recipient_wallet_id, created_at DESC, id DESC)
  WHERE recipient_wallet_id IS NOT NULL;
DROP INDEX transactions_wallet_idx;
DROP INDEX transactions_recipient_idx;
-- provider_reference: transactions_provider_ref_unique (application_id, mode, provider_reference).

-- Users: email has users_email_unique (application_id, mode, lower(email)) already.
CREATE INDEX users_phone_number_idx ON users (application_id, mode, phone_number);
CREATE INDEX users_app_user_id_idx ON users (application_id, mode, app_user_id);

-- `q` is a case-insensitive substring (ILIKE '%...%'): trigram indexes serve it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX users_name_trgm_idx ON users USING gin (name gin_trgm_ops);
CREATE INDEX users_email_trgm_idx ON users USING gin (email gin_trgm_ops);
CREATE INDEX users_phone_number_trgm_idx ON users USING gin (phone_number gin_trgm_ops);
CREATE INDEX users_app_user_id_trgm_idx ON users USING gin (app_user_id gin_trgm_ops);
