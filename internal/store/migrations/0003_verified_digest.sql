-- SHA-256 of (agent_id || action_hash || agent_signature) of every
-- attestation whose Ed25519 signature passed the check at ingest. Bulk
-- verification compares it with sha256() of the stored bytes and skips the
-- Ed25519 check only when they still match: a row whose key, hash or
-- signature changed after ingest is verified afresh (and fails). NULL:
-- not verified at ingest, or stored before this column existed.
ALTER TABLE attestations ADD COLUMN verified_digest bytea CHECK (verified_digest IS NULL OR length(verified_digest) = 32);
