-- An account can be a Solana wallet: whoever signs in to the web application
-- with the wallet's key (Sign-In-With-Solana) acts for the account. A wallet
-- names at most one account; accounts made on the CLI have none until an
-- operator links one (attestd accounts link-wallet).
ALTER TABLE accounts ADD COLUMN wallet text UNIQUE CHECK (wallet ~ '^[1-9A-HJ-NP-Za-km-z]{32,44}$');

-- The console shows a wallet's own x402 payments (the ledger's payer).
CREATE INDEX payments_payer ON payments (payer, created_at DESC, id DESC);
