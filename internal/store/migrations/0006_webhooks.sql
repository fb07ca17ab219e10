-- Webhooks: an account's subscriptions to events. The signing secret is
-- stored sealed with AES-GCM under a key from the environment
-- (ATTESTD_WEBHOOK_SECRET_KEYS); secret_key_id names the key that sealed it,
-- so keys can rotate and old secrets be re-sealed under the newest key.
-- Filters: an empty array means "every agent" / "every action type".
-- failing_since is when the current run of failed deliveries began (NULL
-- after any success); a webhook failing for too long is deactivated and
-- disabled_reason says why, for its owner to read.
CREATE TABLE webhooks (
    id              text PRIMARY KEY CHECK (id ~ '^wh_[0-9a-f]{24}$'),
    account_id      bigint      NOT NULL REFERENCES accounts (id),
    url             text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    events          text[]      NOT NULL CHECK (cardinality(events) >= 1),
    agents          text[]      NOT NULL DEFAULT '{}',
    action_types    text[]      NOT NULL DEFAULT '{}',
    description     text        NOT NULL DEFAULT '' CHECK (length(description) <= 200),
    secret_sealed   bytea       NOT NULL,
    secret_key_id   text        NOT NULL,
    active          boolean     NOT NULL DEFAULT true,
    disabled_reason text,
    disabled_at     timestamptz,
    failing_since   timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_account ON webhooks (account_id, created_at, id);

-- The outbox is the source of truth of the delivery pipeline. published_at:
-- when a relay last put the row on the Redis event stream (rows published
-- long ago and still not dispatched are published again). target_webhook:
-- set for test events, which go to that webhook only.
ALTER TABLE outbox ADD COLUMN published_at timestamptz;
ALTER TABLE outbox ADD COLUMN target_webhook text REFERENCES webhooks (id) ON DELETE CASCADE;
CREATE INDEX outbox_created ON outbox (created_at);
CREATE INDEX outbox_target ON outbox (target_webhook) WHERE target_webhook IS NOT NULL;

-- One delivery per (webhook, event): its id is the webhook-id header,
-- the same on every attempt. A pending delivery is waiting for its next
-- attempt (next_attempt_at; NULL: due now).
CREATE TABLE webhook_deliveries (
    id              text PRIMARY KEY CHECK (id ~ '^msg_[0-9a-f]{32}$'),
    webhook_id      text        NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    outbox_id       bigint      NOT NULL REFERENCES outbox (id) ON DELETE CASCADE,
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (webhook_id, outbox_id)
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_outbox ON webhook_deliveries (outbox_id);

-- Every attempt, as its owner reads it at GET /webhooks/:id/deliveries.
CREATE TABLE webhook_attempts (
    id              bigserial PRIMARY KEY,
    delivery_id     text        NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    webhook_id      text        NOT NULL,
    attempt         integer     NOT NULL CHECK (attempt >= 1),
    manual          boolean     NOT NULL DEFAULT false,
    at              timestamptz NOT NULL,
    succeeded       boolean     NOT NULL,
    status_code     integer,
    latency_ms      integer     NOT NULL CHECK (latency_ms >= 0),
    error           text,
    response        text        NOT NULL DEFAULT '' CHECK (length(response) <= 4096),
    next_attempt_at timestamptz
);
CREATE INDEX webhook_attempts_log ON webhook_attempts (webhook_id, id DESC);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id DESC);
