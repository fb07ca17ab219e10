-- Key roles. An 'admin' key manages its account's keys and webhooks; a
-- 'read' key only calls the premium routes and can never revoke a key of a
-- higher role. Keys that exist before this migration become 'admin': they
-- were made by the CLI or, through POST /keys, by an account holder whose
-- key could already do everything, so none of them loses a right here.
-- The default is dropped afterwards: every new key states its role.
ALTER TABLE api_keys ADD COLUMN role text NOT NULL DEFAULT 'admin' CHECK (role IN ('admin', 'read'));
ALTER TABLE api_keys ALTER COLUMN role DROP DEFAULT;
