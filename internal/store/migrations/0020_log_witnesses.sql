-- Witnesses of the transparency log (docs/log.md): the cosignatures they
-- returned (C2SP tlog-cosignature), and where each stands.

-- How many witnesses cosigned each checkpoint: API nodes serve the newest
-- checkpoint with at least the quorum (the partial index finds it without
-- walking checkpoints no witness cosigned).
ALTER TABLE log_checkpoints ADD COLUMN cosignatures integer NOT NULL DEFAULT 0 CHECK (cosignatures >= 0);
CREATE INDEX log_checkpoints_cosigned ON log_checkpoints (origin, size) WHERE cosignatures > 0;

-- One witness's cosignature of one checkpoint: its note signature line
-- ("— <name> <base64>\n"), checked before it is stored.
CREATE TABLE log_cosignatures (
    origin      text        NOT NULL,
    size        bigint      NOT NULL,
    witness     text        NOT NULL, -- its verifier key (name+keyid+base64)
    line        text        NOT NULL,
    cosigned_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (origin, size, witness),
    FOREIGN KEY (origin, size) REFERENCES log_checkpoints (origin, size)
);

-- Where each witness stands: the size it last cosigned (the old size of
-- the next add-checkpoint), and its last failure while it fails.
CREATE TABLE log_witnesses (
    origin      text        NOT NULL,
    witness     text        NOT NULL,
    size        bigint      NOT NULL DEFAULT 0,
    cosigned_at timestamptz,
    error       text,
    failing_since timestamptz,
    PRIMARY KEY (origin, witness)
);
