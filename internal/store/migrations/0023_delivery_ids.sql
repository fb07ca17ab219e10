-- A chain event's deliveries have ids derived from the event, not drawn
-- at random (docs/webhooks.md, Deduplicating): the webhook-id a receiver
-- deduplicates on is the same when the event is made again, as the
-- indexer does when it refills a database restored from a backup.
-- chain_key names the event in chain terms (the pda, the transaction,
-- the event's index, the slot); NULL for events attestd makes itself
-- (webhook.test, webhook.disabled), whose deliveries keep random ids.
ALTER TABLE outbox ADD COLUMN chain_key text;
