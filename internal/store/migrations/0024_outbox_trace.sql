-- The W3C traceparent of the span that wrote an outbox row (the indexer's
-- batch of its round, the API request of a test event), so the webhook
-- fan-out and delivery spans can link to it (docs/operations.md,
-- Tracing). NULL when the writer was not traced, and for every row
-- written before this migration. The writer stores only a well-formed
-- version-00 traceparent (55 characters); the type bounds it here too.
-- A nullable column without a default: no rewrite of the table.
ALTER TABLE outbox ADD COLUMN traceparent varchar(55);
