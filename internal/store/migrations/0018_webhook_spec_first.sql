-- Webhooks to SPEC first (issue 32).
--
-- Endpoint verification no longer gates deliveries: every active webhook
-- gets its events, and the webhook.verify challenge only lifts the
-- per-host cap of unverified endpoints. So a round that ends without the
-- right answer leaves the endpoint 'unverified' (it was 'failed', which
-- stopped its deliveries); 'pending' is a round in progress.
ALTER TABLE webhooks DROP CONSTRAINT webhooks_verification_check;
UPDATE webhooks SET verification = 'unverified' WHERE verification = 'failed';
ALTER TABLE webhooks ADD CONSTRAINT webhooks_verification_check
    CHECK (verification IN ('pending', 'verified', 'unverified'));
-- A verification request waits its turn at the host's cap like a delivery:
-- verify_turn_at is the turn it holds (the next attempt is made on it
-- without asking the cap again); NULL: none.
ALTER TABLE webhooks ADD COLUMN verify_turn_at timestamptz;

-- A recovery's deliveries are the ones that matched when it was asked for:
-- recovery_id marks them (each delivery in at most one running recovery),
-- so the count it answers is exactly what it sends. The worker clears the
-- mark as it queues (or skips) each one; a finished recovery leaves none.
-- skipped: marked deliveries not sent after all (acknowledged meanwhile by
-- a manual retry, pruned, or the webhook was deactivated); when a recovery
-- is done, queued + skipped = total.
ALTER TABLE webhook_deliveries ADD COLUMN recovery_id text REFERENCES webhook_recoveries (id) ON DELETE SET NULL;
CREATE INDEX webhook_deliveries_recovery ON webhook_deliveries (recovery_id, created_at, id) WHERE recovery_id IS NOT NULL;
ALTER TABLE webhook_recoveries ADD COLUMN skipped bigint NOT NULL DEFAULT 0 CHECK (skipped >= 0);
