-- Endpoint verification: a webhook's URL is delivered to only once its
-- receiver answered a signed webhook.verify challenge. verification is
-- pending (deliveries wait), verified or failed (deliveries are failed);
-- verification_at is when it last changed. A worker claims a due pending
-- verification by moving verify_next_at past the attempt; verify_round
-- changes whenever the URL changes or the owner asks again, so the answer
-- of an older attempt is never recorded over a newer round.
-- Webhooks that existed before this migration keep delivering (verified,
-- verification_at NULL); every webhook created or re-pointed after it starts
-- pending.
ALTER TABLE webhooks
    ADD COLUMN verification    text        NOT NULL DEFAULT 'verified'
        CHECK (verification IN ('pending', 'verified', 'failed')),
    ADD COLUMN verification_at timestamptz,
    ADD COLUMN verify_round    integer     NOT NULL DEFAULT 0,
    ADD COLUMN verify_attempts integer     NOT NULL DEFAULT 0,
    ADD COLUMN verify_next_at  timestamptz,
    ADD COLUMN verify_error    text        CHECK (length(verify_error) <= 400);
ALTER TABLE webhooks ALTER COLUMN verification SET DEFAULT 'pending';
CREATE INDEX webhooks_verify_due ON webhooks (verify_next_at) WHERE verification = 'pending';
