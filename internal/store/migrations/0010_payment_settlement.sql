-- x402 settlement follows the chain, and a settled payment may be
-- presented again for the answer it bought.
-- request_fingerprint: SHA-256 of what was bought (method, path, canonical
--   query, body digest); a re-presented payment is answered again only for
--   the same fingerprint. request: the same, readable (method and path).
-- payment_id: the x402 payment-identifier extension's id, when sent.
-- last_valid_height: the block height after which the transaction can no
--   longer land (its blockhash expired): a pending row is released only
--   once the chain is past it.
-- checked_at: when the reconciler last looked at the row.
ALTER TABLE payments
    ADD COLUMN request_fingerprint bytea CHECK (request_fingerprint IS NULL OR length(request_fingerprint) = 32),
    ADD COLUMN request             text NOT NULL DEFAULT '',
    ADD COLUMN payment_id          text UNIQUE CHECK (payment_id IS NULL OR length(payment_id) BETWEEN 16 AND 128),
    ADD COLUMN last_valid_height   bigint,
    ADD COLUMN checked_at          timestamptz;
CREATE INDEX payments_open ON payments (checked_at NULLS FIRST, id) WHERE status IN ('pending', 'failed');
