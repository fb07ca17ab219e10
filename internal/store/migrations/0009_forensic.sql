-- Maintained data for forensic reports, so that a report's cost grows with
-- the hours of its period and with what it finds, not with the agent's rows.
--
-- Hourly counters also count privacy-mode attestations; the primary key
-- carries both counts, so a period is summed from the index alone.
ALTER TABLE attestation_hours ADD COLUMN privacy bigint NOT NULL DEFAULT 0;

UPDATE attestation_hours h SET privacy = p.n
FROM (
    SELECT COALESCE(agent_pda, '') AS agent_pda, COALESCE(action_type, -1) AS action_type, hour, count(*) AS n
    FROM (SELECT agent_pda, action_type, date_trunc('hour', ts, 'UTC') AS hour FROM attestations WHERE privacy_mode) a
    GROUP BY GROUPING SETS ((agent_pda, action_type, hour), (agent_pda, hour), (action_type, hour), (hour))
) p
WHERE h.agent_pda = p.agent_pda AND h.action_type = p.action_type AND h.hour = p.hour;

ALTER TABLE attestation_hours DROP CONSTRAINT attestation_hours_pkey;
ALTER TABLE attestation_hours ADD PRIMARY KEY (agent_pda, action_type, hour) INCLUDE (n, privacy);

-- The few rows a report lists or counts apart: signatures that failed at
-- ingest, and rows not finalized yet (a finality lag's worth).
CREATE INDEX attestations_invalid ON attestations (agent_pda, ts) WHERE NOT signature_valid;
CREATE INDEX attestations_unfinalized_agent ON attestations (agent_pda, ts) WHERE NOT finalized;

-- Action hashes an agent attested more than once, ever. The write path adds
-- a pair when it stores a second attestation of it (found through the hash
-- index below). Fork removal leaves pairs in place: a report re-counts each
-- pair's attestations in its period, so a pair that is no longer repeated
-- costs one index probe and is not reported.
CREATE INDEX attestations_action_hash ON attestations USING hash (action_hash);

CREATE TABLE attestation_repeats (
    agent_pda   text  NOT NULL,
    action_hash bytea NOT NULL,
    PRIMARY KEY (agent_pda, action_hash)
);

INSERT INTO attestation_repeats (agent_pda, action_hash)
SELECT agent_pda, action_hash FROM attestations GROUP BY agent_pda, action_hash HAVING count(*) > 1;
