-- Agents by activity (GET /agents, newest activity first) and published
-- sample payloads (the demo data's "try the sample payload").
--
-- last_attestation_at is the newest timestamp of the agent's attestations,
-- kept by statement-level triggers on attestations (insert and fork
-- removal), so every write path keeps it without knowing. activity_at is
-- the newest of that and updated_at (registration, policy update,
-- revocation): the order of the list, on its own index.
ALTER TABLE agents ADD COLUMN last_attestation_at timestamptz;
UPDATE agents a SET last_attestation_at = (SELECT max(ts) FROM attestations t WHERE t.agent_pda = a.pda);
ALTER TABLE agents ADD COLUMN activity_at timestamptz
    GENERATED ALWAYS AS (GREATEST(updated_at, last_attestation_at)) STORED;
CREATE INDEX agents_activity ON agents (activity_at DESC, pda DESC);

CREATE FUNCTION agents_activity_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agents a SET last_attestation_at = n.ts
    FROM (SELECT agent_pda, max(ts) AS ts FROM new_rows GROUP BY agent_pda) n
    WHERE a.pda = n.agent_pda AND (a.last_attestation_at IS NULL OR a.last_attestation_at < n.ts);
    RETURN NULL;
END $$;

CREATE FUNCTION agents_activity_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agents a SET last_attestation_at = (SELECT max(ts) FROM attestations t WHERE t.agent_pda = a.pda)
    WHERE a.pda IN (SELECT DISTINCT agent_pda FROM old_rows);
    RETURN NULL;
END $$;

CREATE TRIGGER attestations_activity_insert AFTER INSERT ON attestations
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agents_activity_after_insert();
CREATE TRIGGER attestations_activity_delete AFTER DELETE ON attestations
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION agents_activity_after_delete();

-- An agent registered after some of its attestations were stored (the
-- chain is read out of order on backfill) starts with them.
CREATE FUNCTION agents_activity_before_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.last_attestation_at := (SELECT max(ts) FROM attestations t WHERE t.agent_pda = NEW.pda);
    RETURN NEW;
END $$;
CREATE TRIGGER agents_activity_insert BEFORE INSERT ON agents
    FOR EACH ROW EXECUTE FUNCTION agents_activity_before_insert();

-- Sample payloads: payloads an operator publishes beside their hashes
-- (attestd seed writes a few for the demo data), so the explorer can offer
-- "try the sample payload" on an attestation whose hash has one. The
-- service never learns payloads otherwise.
CREATE TABLE sample_payloads (
    action_hash bytea PRIMARY KEY CHECK (length(action_hash) = 32),
    payload     text        NOT NULL CHECK (length(payload) <= 4096),
    CHECK (action_hash = sha256(convert_to(payload, 'UTF8'))),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Daily counters, kept from the hourly ones by statement-level triggers
-- (every write of attestation_hours, whatever its path), so a chart by day
-- over a long range reads one row per day and type rather than 24. Rows
-- are upserted in key order, as the write path does, so concurrent
-- writers cannot deadlock on them.
CREATE TABLE attestation_days (
    agent_pda   text        NOT NULL,
    action_type smallint    NOT NULL CHECK (action_type BETWEEN -1 AND 6),
    day         timestamptz NOT NULL CHECK (date_trunc('day', day, 'UTC') = day),
    n           bigint      NOT NULL,
    PRIMARY KEY (agent_pda, action_type, day) INCLUDE (n)
);
INSERT INTO attestation_days (agent_pda, action_type, day, n)
SELECT agent_pda, action_type, date_trunc('day', hour, 'UTC'), sum(n) FROM attestation_hours GROUP BY 1, 2, 3;

CREATE FUNCTION attestation_days_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO attestation_days (agent_pda, action_type, day, n)
    SELECT agent_pda, action_type, date_trunc('day', hour, 'UTC'), sum(n) FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (agent_pda, action_type, day) DO UPDATE SET n = attestation_days.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE FUNCTION attestation_days_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO attestation_days (agent_pda, action_type, day, n)
    SELECT d.agent_pda, d.action_type, d.day, sum(d.n) FROM (
        SELECT agent_pda, action_type, date_trunc('day', hour, 'UTC') AS day, n FROM new_rows
        UNION ALL
        SELECT agent_pda, action_type, date_trunc('day', hour, 'UTC'), -n FROM old_rows) d
    GROUP BY 1, 2, 3 HAVING sum(d.n) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (agent_pda, action_type, day) DO UPDATE SET n = attestation_days.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE FUNCTION attestation_days_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO attestation_days (agent_pda, action_type, day, n)
    SELECT agent_pda, action_type, date_trunc('day', hour, 'UTC'), -sum(n) FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (agent_pda, action_type, day) DO UPDATE SET n = attestation_days.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE TRIGGER attestation_hours_days_insert AFTER INSERT ON attestation_hours
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION attestation_days_after_insert();
CREATE TRIGGER attestation_hours_days_update AFTER UPDATE ON attestation_hours
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION attestation_days_after_update();
CREATE TRIGGER attestation_hours_days_delete AFTER DELETE ON attestation_hours
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION attestation_days_after_delete();
