-- The live stream's log (GET /attestations/stream): one row per change a
-- stream client sees, in commit order. seq comes from stream_seq, whose
-- single row each writing transaction locks until it commits, so seq is
-- gapless and a reader that sees seq n sees every row below it: a client
-- that resumes after seq n misses nothing and gets nothing twice.
-- kind: 0 a new attestation, 1 it became finalized, 2 a fork removed it.
-- Readers render the first two from the attestations row (pda and slot);
-- only a removal keeps its data (pda and txSignature), the row being gone. Rows older than the retention are pruned by the serving
-- nodes; a cursor older than the oldest row is answered "too old".
CREATE TABLE stream_seq (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    n   bigint  NOT NULL
);
INSERT INTO stream_seq (one, n) VALUES (true, 0);

CREATE TABLE stream_events (
    seq          bigint PRIMARY KEY,
    kind         smallint    NOT NULL CHECK (kind BETWEEN 0 AND 2),
    pda          text        NOT NULL,
    agent_pda    text        NOT NULL,
    action_type  smallint    NOT NULL,
    ts           timestamptz NOT NULL,
    slot         bigint      NOT NULL,
    data         bytea CHECK ((kind = 2) = (data IS NOT NULL)),
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stream_events_agent ON stream_events (agent_pda, seq);
CREATE INDEX stream_events_pda   ON stream_events (pda, seq) WHERE kind = 0;
