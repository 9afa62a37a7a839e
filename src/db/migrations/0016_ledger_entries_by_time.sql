-- Statements and balances at an instant read one account's entries by time
-- (src/db/statements.ts): a range of this index, its sums index-only thanks to the amount it
-- carries. It serves every lookup by account the old index served, so that one goes.
CREATE INDEX ledger_entries_by_time_idx
  ON ledger_entries (account_id, created_at, id) INCLUDE (amount);
DROP INDEX ledger_entries_account_idx;
