-- x402 answers: the answer a settled payment bought, kept so that the
-- same payment presented again (the same PAYMENT-SIGNATURE, or the same
-- payment-identifier, for the same request) gets exactly those bytes and
-- headers on any node, never a new answer, until expires_at.
-- payment_id: the ledger row (one answer per payment; the row is written
--   before the payment is settled, and dropped when the payment is
--   released: nothing was bought).
-- status: the HTTP status sent. headers: the answer's content headers, a
--   JSON array of [name, value] pairs, in the order sent.
-- body: the body as sent, gzip-compressed for storage unless it was sent
--   gzip-encoded (then it is the sent bytes themselves); encoding says
--   which ('gzip': sent with Content-Encoding: gzip; '': sent as is).
-- body_size: the stored bytes; plain_size: the decoded body's length;
--   digest: hex SHA-256 of the decoded body (the receipt's responseDigest).
-- response_header, payment_response: the settlement header sent with the
--   answer (PAYMENT-RESPONSE or X-PAYMENT-RESPONSE) and its value, NULL
--   until the payment settles; the first kept is the one every
--   re-presentation gets.
CREATE TABLE payment_answers (
    payment_id       bigint      PRIMARY KEY REFERENCES payments (id) ON DELETE CASCADE,
    status           integer     NOT NULL CHECK (status BETWEEN 200 AND 399),
    headers          jsonb       NOT NULL,
    body             bytea       NOT NULL,
    encoding         text        NOT NULL CHECK (encoding IN ('', 'gzip')),
    body_size        integer     NOT NULL CHECK (body_size >= 0),
    plain_size       integer     NOT NULL CHECK (plain_size >= 0),
    digest           text        NOT NULL CHECK (length(digest) = 64),
    response_header  text,
    payment_response text        CHECK (payment_response IS NULL OR length(payment_response) BETWEEN 1 AND 16384),
    stored_at        timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL
);
CREATE INDEX payment_answers_expires ON payment_answers (expires_at);
-- The bytes all kept answers hold, one row, kept exact by every write of
-- payment_answers (a new answer is refused when it would pass the cap).
CREATE TABLE payment_answer_usage (
    id    integer PRIMARY KEY CHECK (id = 1),
    bytes bigint  NOT NULL CHECK (bytes >= 0)
);
INSERT INTO payment_answer_usage (id, bytes) VALUES (1, 0);
