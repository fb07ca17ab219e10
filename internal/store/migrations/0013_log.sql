-- The transparency log (package translog, docs/log.md): every finalized
-- attestation becomes one leaf of an append-only RFC 6962 Merkle tree.

-- The outbox of the log: finalized attestations not yet appended. The
-- triggers below fill it in the same transaction that stores a finalized
-- attestation or promotes one to finalized, so a finality change that
-- commits is never without its queue row; the appender takes rows out in
-- the transaction that appends their leaves. Confirmed rows never enter
-- it (a fork may still drop them), and finalized rows are never deleted.
CREATE TABLE log_queue (
    pda          text        PRIMARY KEY,
    slot         bigint      NOT NULL,
    tx_signature text        NOT NULL,
    event_index  integer     NOT NULL,
    queued_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX log_queue_order ON log_queue (slot, tx_signature, event_index, pda);
CREATE INDEX log_queue_age ON log_queue (queued_at); -- the log's lag: the oldest row

-- The leaves, by index. A pda has at most one leaf (UNIQUE): an append
-- that would add a second one fails and rolls back whole.
CREATE TABLE log_leaves (
    idx       bigint      PRIMARY KEY CHECK (idx >= 0),
    pda       text        NOT NULL UNIQUE,
    leaf      bytea       NOT NULL,
    logged_at timestamptz NOT NULL DEFAULT now()
);

-- The RFC 6962 stored hashes (golang.org/x/mod/sumdb/tlog's numbering:
-- tlog.StoredHashIndex), written with their leaves.
CREATE TABLE log_hashes (
    id   bigint PRIMARY KEY CHECK (id >= 0),
    hash bytea  NOT NULL CHECK (length(hash) = 32)
);

-- The tree size: one row, locked by every append (appends are serial).
CREATE TABLE log_size (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    size bigint  NOT NULL CHECK (size >= 0)
);
INSERT INTO log_size (one, size) VALUES (true, 0);

-- Signed checkpoints (C2SP tlog-checkpoint signed notes), per origin: a
-- key rotation starts a new origin and the old checkpoints stay.
CREATE TABLE log_checkpoints (
    origin    text        NOT NULL,
    size      bigint      NOT NULL CHECK (size >= 0),
    root      bytea       NOT NULL CHECK (length(root) = 32),
    note      text        NOT NULL,
    signed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (origin, size)
);

CREATE FUNCTION log_queue_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO log_queue (pda, slot, tx_signature, event_index)
    SELECT pda, slot, tx_signature, event_index FROM log_new_rows WHERE finalized
    ON CONFLICT (pda) DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION log_queue_finalized() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO log_queue (pda, slot, tx_signature, event_index)
    SELECT n.pda, n.slot, n.tx_signature, n.event_index
    FROM log_new_rows n JOIN log_old_rows o ON o.pda = n.pda
    WHERE n.finalized AND NOT o.finalized
    ON CONFLICT (pda) DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER attestations_log_inserted AFTER INSERT ON attestations
    REFERENCING NEW TABLE AS log_new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION log_queue_inserted();
CREATE TRIGGER attestations_log_finalized AFTER UPDATE ON attestations
    REFERENCING OLD TABLE AS log_old_rows NEW TABLE AS log_new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION log_queue_finalized();

-- What was finalized before this migration waits for its leaf like the rest.
INSERT INTO log_queue (pda, slot, tx_signature, event_index)
SELECT pda, slot, tx_signature, event_index FROM attestations WHERE finalized;
