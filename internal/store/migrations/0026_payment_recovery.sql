-- Settlements recovered from the chain (docs/operations.md, Restore): a
-- database restored from a backup lost the ledger rows of payments
-- settled after it was taken, but their transfers to payTo are on chain.
-- The reconciler lists payTo's token account's transactions from the
-- newest one it checked (payment_recovery, per account: in the backup,
-- so a restore rescans what it lost) and records each settled payment
-- the ledger does not hold, recovered = true: its request and its kept
-- answer were lost with the database.
ALTER TABLE payments ADD COLUMN recovered boolean NOT NULL DEFAULT false;

CREATE TABLE payment_recovery (
    account          text        PRIMARY KEY, -- payTo's associated token account
    newest_signature text        NOT NULL,    -- the newest transaction checked
    newest_slot      bigint      NOT NULL,
    checked_at       timestamptz NOT NULL DEFAULT now()
);
