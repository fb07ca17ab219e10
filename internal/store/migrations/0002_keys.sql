-- Accounts own API keys. The name is the handle operators use on the CLI.
CREATE TABLE accounts (
    id         bigserial PRIMARY KEY,
    name       text        NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- API keys: "atst_" + base58(32 random bytes). Only the SHA-256 of the whole
-- key and its first 8 characters after "atst_" (the prefix, unique: it names
-- the key on the CLI and in DELETE /keys/:prefix) are stored; the key itself
-- is shown once, at creation. last_used_at is written in batches, so it lags
-- real use by up to the flush interval. A key is revoked when revoked_at is set.
CREATE TABLE api_keys (
    id           bigserial PRIMARY KEY,
    account_id   bigint      NOT NULL REFERENCES accounts (id),
    prefix       text        NOT NULL UNIQUE CHECK (prefix ~ '^[1-9A-HJ-NP-Za-km-z]{8}$'),
    key_hash     bytea       NOT NULL CHECK (length(key_hash) = 32),
    label        text        NOT NULL DEFAULT '' CHECK (length(label) <= 100),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at DESC, id DESC);
