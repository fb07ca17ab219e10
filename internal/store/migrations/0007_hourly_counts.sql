-- Hourly counters maintained by the write path (insert and fork removal),
-- so totals over a time range never count rows: the whole hours of a
-- range are summed here, and only its partial first and last hours are
-- counted on the matching index (bounded work, whatever the range).
-- agent_pda '' holds all agents; action_type -1 holds all types. The key
-- carries n, so a range is summed from the index alone: rows of one agent
-- and type are scattered over the heap (they are written hour by hour).
CREATE TABLE attestation_hours (
    agent_pda   text        NOT NULL,
    action_type smallint    NOT NULL CHECK (action_type BETWEEN -1 AND 6),
    hour        timestamptz NOT NULL CHECK (date_trunc('hour', hour, 'UTC') = hour),
    n           bigint      NOT NULL,
    PRIMARY KEY (agent_pda, action_type, hour) INCLUDE (n)
);

INSERT INTO attestation_hours (agent_pda, action_type, hour, n)
SELECT COALESCE(agent_pda, ''), COALESCE(action_type, -1), hour, count(*)
FROM (SELECT agent_pda, action_type, date_trunc('hour', ts, 'UTC') AS hour FROM attestations) a
GROUP BY GROUPING SETS ((agent_pda, action_type, hour), (agent_pda, hour), (action_type, hour), (hour));
