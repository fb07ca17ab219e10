-- The log's order is a function of the chain (docs/log.md, Order): a leaf
-- is appended only once every attestation of its slot, and of every slot
-- before it, is known and final, in (slot, transaction signature, event
-- index) order. The frontier is the newest slot for which that holds, as
-- the indexer has checked against the chain's finalized listing (or a
-- writer that made the data, such as seed, declares); it only grows.
-- order_from_size is the log's size when the rule began: leaves from it
-- on are re-derivable from the chain alone; those before it (a log
-- started by an older release) keep the order they were appended in.
CREATE TABLE log_order (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    frontier bigint NOT NULL,
    order_from_size bigint NOT NULL
);

-- A database that already holds attestations was being appended as they
-- finalized: the rule applies from the log's current size on, above the
-- newest finalized slot known now.
INSERT INTO log_order (frontier, order_from_size)
SELECT COALESCE((SELECT max(slot) FROM attestations WHERE finalized), 0), (SELECT size FROM log_size);
