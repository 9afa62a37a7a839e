-- Merchant metadata on payments and disputes (docs/api.md, "Metadata"). A payment's `metadata` column holds the engine's own provider facts, which the
-- merchant never sets or sees as such; the merchant's keys live apart, under the same CHECK as
-- users' and wallets'.
ALTER TABLE transactions ADD COLUMN merchant_metadata jsonb NOT NULL DEFAULT '{}'::jsonb
  CONSTRAINT transactions_merchant_metadata_valid CHECK (merchant_metadata_valid(merchant_metadata));
ALTER TABLE disputes ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb
  CONSTRAINT disputes_metadata_valid CHECK (merchant_metadata_valid(metadata));
