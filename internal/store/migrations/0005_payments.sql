-- x402 payments: one row per payment a node accepted (verified and claimed
-- before the premium handler ran). message_hash is the SHA-256 of the
-- Solana transaction message, the replay key: unique, so one payment buys
-- one answer on the whole fleet even if Redis forgets. tx_signature is the
-- settled transaction's signature, set when known. status moves
-- pending -> settled | failed, or pending -> released when the handler
-- answered an error and nothing was charged (a released payment may be
-- presented again). amount is in atomic units of asset.
CREATE TABLE payments (
    id           bigserial   PRIMARY KEY,
    message_hash bytea       NOT NULL UNIQUE CHECK (length(message_hash) = 32),
    tx_signature text        UNIQUE,
    network      text        NOT NULL,
    asset        text        NOT NULL,
    pay_to       text        NOT NULL,
    payer        text        NOT NULL,
    amount       bigint      NOT NULL CHECK (amount > 0),
    route        text        NOT NULL,
    status       text        NOT NULL CHECK (status IN ('pending', 'settled', 'failed', 'released')),
    reason       text        NOT NULL DEFAULT '',
    node         text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    settled_at   timestamptz
);
CREATE INDEX payments_created ON payments (created_at DESC, id DESC);
CREATE INDEX payments_status ON payments (status, created_at DESC) WHERE status <> 'settled';
