-- single sign-ons begun and not yet completed: what the provider's redirect back must be checked against

-- Keyed by the SHA-256 of the state sent to the provider; a row is deleted by the callback that uses it
-- (one use), and expires 10 minutes after it was made.
CREATE TABLE sso_sign_ins (
  state_hash bytea PRIMARY KEY,
  code_verifier text NOT NULL,
  nonce text NOT NULL,
  redirect_uri text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX sso_sign_ins_expiry ON sso_sign_ins (expires_at);
