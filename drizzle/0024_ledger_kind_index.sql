-- The entries that are not charges (top-ups, refunds, adjustments), by organization and kind, newest first: the
-- wallet page reads an organization's latest top-ups, which meant walking the ledger back past every charge since
-- (214 ms for a ledger of a million entries, linear in it; docs/benchmark.md). The build reads the ledger once.
CREATE INDEX "ledger_org_kind_idx" ON "ledger_entries" USING btree ("org_id","kind","id") WHERE "ledger_entries"."kind" <> 'charge';
