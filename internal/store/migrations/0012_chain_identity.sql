-- Chain identity: the genesis hash of the chain a checkpoint was indexed
-- from, one row per checkpoint name (the indexer's "indexer"). An indexer
-- pointed at a chain with another genesis (another cluster, a reset
-- validator, a fresh local simulator) refuses to write until told to start
-- over, and /health reports the mismatch. Databases indexed before this
-- migration have no row: the first indexer to run records its chain.
CREATE TABLE chain_identity (
    checkpoint   text PRIMARY KEY,
    genesis_hash text        NOT NULL CHECK (length(genesis_hash) BETWEEN 1 AND 100),
    recorded_at  timestamptz NOT NULL DEFAULT now()
);
