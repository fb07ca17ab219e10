-- Webhooks on a par with Svix and Convoy (issue 26).
--
-- Signing-secret rotation with overlap: previous_secret_sealed is the
-- secret in use before the last rotation, still signed with until
-- previous_secret_until. Asymmetric signatures: signature_scheme says which
-- webhook-signature entries a delivery carries (v1: HMAC, v1a: Ed25519,
-- both); the Ed25519 private key is sealed like the secret
-- (ed25519_sealed), its public key published as public_key (whpk_...).
-- Every sealed value of a row is sealed with secret_key_id, so re-sealing
-- under a new key moves them together. rate_limit_per_second is the
-- subscriber's own cap on deliveries per second (NULL: the server's).
ALTER TABLE webhooks
    ADD COLUMN previous_secret_sealed bytea,
    ADD COLUMN previous_secret_until  timestamptz,
    ADD COLUMN signature_scheme       text NOT NULL DEFAULT 'v1' CHECK (signature_scheme IN ('v1', 'v1a', 'both')),
    ADD COLUMN ed25519_sealed         bytea,
    ADD COLUMN public_key             text CHECK (public_key ~ '^whpk_[A-Za-z0-9+/]{43}=$'),
    ADD COLUMN rate_limit_per_second  integer CHECK (rate_limit_per_second BETWEEN 1 AND 100000),
    ADD CONSTRAINT webhooks_v1a_key CHECK (signature_scheme = 'v1' OR (ed25519_sealed IS NOT NULL AND public_key IS NOT NULL));

-- attempts_base: the attempts made before the delivery's current run (a
-- recovery starts a new run with the whole retry schedule).
-- recovery_id: the recovery that queued the delivery again, if any.
ALTER TABLE webhook_deliveries ADD COLUMN attempts_base integer NOT NULL DEFAULT 0;
CREATE INDEX webhook_deliveries_window ON webhook_deliveries (webhook_id, created_at, id);

-- A recovery: "send again what failed (or everything) between since and
-- until". The deliveries are taken in (created_at, id) order after the
-- cursor, at a bounded rate, by one worker at a time (lease_until); total
-- is how many matched when it was asked for, queued how many were queued.
-- One running recovery per webhook and window: asking again while it runs
-- answers the same one (a window without an end, open_ended, is the same
-- window whatever the time it was asked at).
CREATE TABLE webhook_recoveries (
    id            text        PRIMARY KEY CHECK (id ~ '^rcv_[0-9a-f]{24}$'),
    webhook_id    text        NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    since         timestamptz NOT NULL,
    until         timestamptz NOT NULL CHECK (until > since),
    only_failed   boolean     NOT NULL,
    open_ended    boolean     NOT NULL DEFAULT false,
    state         text        NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done')),
    total         bigint      NOT NULL CHECK (total >= 0),
    queued        bigint      NOT NULL DEFAULT 0,
    cursor_at     timestamptz,
    cursor_id     text,
    lease_until   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);
CREATE UNIQUE INDEX webhook_recoveries_running ON webhook_recoveries (webhook_id, since, only_failed, (CASE WHEN open_ended THEN 'infinity'::timestamptz ELSE until END))
    WHERE state = 'running';
CREATE INDEX webhook_recoveries_due ON webhook_recoveries (lease_until) WHERE state = 'running';
CREATE INDEX webhook_recoveries_webhook ON webhook_recoveries (webhook_id, created_at DESC);
