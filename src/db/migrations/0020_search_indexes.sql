-- What the list, search and export reads need at ten million payments (docs/benchmarks.md,
-- row 8). The metadata filter is containment on the merchant's keys; most payments have none,
-- so the index holds only those that do, and a query names the same predicate to use it.
CREATE INDEX transactions_merchant_metadata_idx
  ON transactions USING gin (merchant_metadata jsonb_path_ops)
  WHERE merchant_metadata <> '{}'::jsonb;

-- A list filtered by status and type at once, newest first: the amount it carries lets the
-- amount filter and the page's total be read from the index alone.
CREATE INDEX transactions_list_status_type_idx
  ON transactions (application_id, mode, status, transaction_type, created_at DESC, id DESC)
  INCLUDE (amount);
