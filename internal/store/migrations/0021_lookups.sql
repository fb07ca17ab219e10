-- Lookups (GET /attestations?actionHash= and ?txSignature=): "who attested
-- this payload" and "what did this transaction record", paged in the
-- list's order.
--
-- A payload's attestations in time order on their own index, so a hash
-- attested many times pages by cursor without sorting them all (rows of
-- the same second are put in slot and pda order as they are read: an
-- incremental sort). Keyed on the hash and the time only: 68 bytes a row
-- against 131 with slot and pda too (measured on 200,000 rows). It
-- replaces the hash index of migration 0009 (34 bytes a row): the write
-- path's probe for repeated hashes (an equality on action_hash) reads this
-- one as well.
CREATE INDEX attestations_hash_order ON attestations (action_hash, ts DESC);
DROP INDEX attestations_action_hash;

-- A transaction's attestations are found on the (tx_signature,
-- event_index) key of migration 0001: at most a transaction's events
-- (100 per record_attestations instruction), sorted as read.

-- Agents by operator (GET /agents?operator=): an agent's pda is derived
-- from its operator, so one operator has at most one agent.
CREATE INDEX agents_operator ON agents (operator);

-- The live stream filters on the lookups too (?actionHash=, ?txSignature=):
-- its log rows carry them (null on rows written before this migration,
-- which the stream's retention prunes within a day). A stream filtered
-- this way reads the log by seq and keeps the matching rows.
ALTER TABLE stream_events ADD COLUMN action_hash bytea, ADD COLUMN tx_signature text;
