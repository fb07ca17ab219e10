-- Coming back from a backup (docs/operations.md, Restore).
--
-- witnessed_size is the largest tree size any of the log's witnesses is
-- known to have cosigned, as the appender learned it from the witnesses
-- themselves at the start of its term: a database restored from a
-- backup holds an older log, and the log must regrow to that size (and
-- the witnesses cosign it again) before any node serves a checkpoint.
-- held_since is set by `attestd restore` on the database it restored:
-- until the appender has asked every witness, no checkpoint is served,
-- since the restored one may be older than what clients already hold.
ALTER TABLE log_order
    ADD COLUMN witnessed_size bigint NOT NULL DEFAULT 0 CHECK (witnessed_size >= 0),
    ADD COLUMN held_since timestamptz;

-- The backups `attestd backup` took of this database, newest last: their
-- age is a metric (attestd_backup_age_seconds) and an alert. A row is
-- written after its dump is complete, so a dump never holds its own.
CREATE TABLE backups (
    id          bigserial   PRIMARY KEY,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    file        text        NOT NULL,
    bytes       bigint      NOT NULL CHECK (bytes >= 0),
    log_size    bigint      NOT NULL,
    chain_slot  bigint      NOT NULL -- the newest slot indexed when the dump began
);
CREATE INDEX backups_finished ON backups (finished_at);
