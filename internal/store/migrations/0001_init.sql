-- Agents: AgentAccount PDAs, as learned from AgentRegistered events.
CREATE TABLE agents (
    pda           text PRIMARY KEY,
    operator      text        NOT NULL,
    agent_id      bytea       NOT NULL CHECK (length(agent_id) = 32),
    policy_root   bytea       NOT NULL CHECK (length(policy_root) = 32),
    initial_policy_root bytea NOT NULL CHECK (length(initial_policy_root) = 32),
    registered_at timestamptz NOT NULL,
    revoked       boolean     NOT NULL DEFAULT false,
    revoked_at    timestamptz,
    updated_at    timestamptz NOT NULL,
    tx_signature  text        NOT NULL,
    event_index   integer     NOT NULL,
    slot          bigint      NOT NULL,
    finalized     boolean     NOT NULL,
    UNIQUE (tx_signature, event_index)
);

-- Agent events after registration: policy root updates and revocations.
CREATE TABLE agent_events (
    tx_signature text        NOT NULL,
    event_index  integer     NOT NULL,
    agent_pda    text        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('policy_updated', 'revoked')),
    policy_root  bytea,
    at           timestamptz NOT NULL,
    slot         bigint      NOT NULL,
    finalized    boolean     NOT NULL,
    PRIMARY KEY (tx_signature, event_index)
);
CREATE INDEX agent_events_agent ON agent_events (agent_pda, at, slot);

-- Attestations: AttestationIssued events. Order everywhere is
-- (ts DESC, slot DESC, pda DESC); each filter has an index in that order.
CREATE TABLE attestations (
    pda             text PRIMARY KEY,
    agent_pda       text        NOT NULL,
    agent_id        bytea       NOT NULL CHECK (length(agent_id) = 32),
    action_type     smallint    NOT NULL CHECK (action_type BETWEEN 0 AND 6),
    action_hash     bytea       NOT NULL CHECK (length(action_hash) = 32),
    privacy_mode    boolean     NOT NULL,
    ts              timestamptz NOT NULL,
    agent_signature bytea       NOT NULL CHECK (length(agent_signature) = 64),
    signature_valid boolean     NOT NULL,
    tx_signature    text        NOT NULL,
    event_index     integer     NOT NULL,
    slot            bigint      NOT NULL,
    finalized       boolean     NOT NULL,
    indexed_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tx_signature, event_index)
);
CREATE INDEX attestations_order      ON attestations (ts DESC, slot DESC, pda DESC);
CREATE INDEX attestations_agent      ON attestations (agent_pda, ts DESC, slot DESC, pda DESC);
CREATE INDEX attestations_type       ON attestations (action_type, ts DESC, slot DESC, pda DESC);
CREATE INDEX attestations_agent_type ON attestations (agent_pda, action_type, ts DESC, slot DESC, pda DESC);
CREATE INDEX attestations_slot       ON attestations (slot DESC);
CREATE INDEX attestations_unfinalized ON attestations (slot) WHERE NOT finalized;

-- Counters maintained by the write path, so totals never need a scan.
-- agent_pda '' holds the global count per action type.
CREATE TABLE attestation_counts (
    agent_pda   text     NOT NULL,
    action_type smallint NOT NULL,
    n           bigint   NOT NULL,
    PRIMARY KEY (agent_pda, action_type)
);

-- How far a reader (the indexer) has come.
CREATE TABLE checkpoints (
    name       text PRIMARY KEY,
    slot       bigint      NOT NULL,
    signature  text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Transactional outbox: one row per newly stored event, for webhooks.
CREATE TABLE outbox (
    id            bigserial PRIMARY KEY,
    event_type    text        NOT NULL,
    payload       jsonb       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    dispatched_at timestamptz
);
CREATE INDEX outbox_pending ON outbox (id) WHERE dispatched_at IS NULL;
