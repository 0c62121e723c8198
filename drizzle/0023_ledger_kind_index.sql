-- The entries that are not charges (top-ups, refunds, adjustments), by organization and kind, newest first: the
-- wallet page reads an organization's latest top-ups, which on the (org_id, id) index meant walking back past every
-- charge since (1.4 s for an organization with five million). The build reads the ledger once.
CREATE INDEX "ledger_org_kind_idx" ON "ledger_entries" USING btree ("org_id","kind","id") WHERE "ledger_entries"."kind" <> 'charge';
