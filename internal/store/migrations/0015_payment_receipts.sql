-- x402 receipts (offer-and-receipt extension): the signed receipt of a
-- settled payment, kept so that the same payment presented again (or the
-- same payment-identifier) gets the same receipt, and so the operator can
-- print it (attestd payments receipt TX).
-- receipt: the compact JWS (EdDSA), NULL until the payment is settled
--   under a receipt key.
ALTER TABLE payments
    ADD COLUMN receipt text CHECK (receipt IS NULL OR length(receipt) BETWEEN 1 AND 4096);
