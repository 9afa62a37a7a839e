-- A provider's message names its payment by the provider's reference alone, before the engine
-- knows the application: without this index each message, and each 3-D Secure page, read every
-- tenant's payments. The unique index on (application_id, mode, provider_reference) cannot serve it.
CREATE INDEX transactions_provider_reference_idx
  ON transactions (provider_reference, transaction_type)
  WHERE provider_reference IS NOT NULL;
