-- operators' accounts, their sessions and setup links, API keys, and the hash-chained audit trail

CREATE TABLE operators (
  operator_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email text NOT NULL,
  name text NOT NULL DEFAULT '',
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'operator', 'viewer')),
  -- NULL: every enterprise; otherwise only these (others look unknown)
  enterprises bigint[],
  enabled boolean NOT NULL DEFAULT true,
  password_hash text,
  -- the OpenID Connect subject, once the operator signed in through single sign-on
  sso_subject text UNIQUE,
  -- set once the operator has a way to sign in (a password set, or a single sign-on done)
  set_up_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX operators_email ON operators (lower(email));

-- one-time links: the first owner's (operator_id NULL) and each added operator's
CREATE TABLE operator_setup_tokens (
  token_hash bytea PRIMARY KEY,
  operator_id bigint REFERENCES operators ON DELETE CASCADE,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);

CREATE TABLE operator_sessions (
  session_hash bytea PRIMARY KEY,
  operator_id bigint NOT NULL REFERENCES operators ON DELETE CASCADE,
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  ended_at timestamptz
);
CREATE INDEX operator_sessions_operator ON operator_sessions (operator_id) WHERE ended_at IS NULL;

CREATE TABLE api_keys (
  key_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  key_hash bytea NOT NULL UNIQUE,
  name text NOT NULL,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'operator', 'viewer')),
  enterprises bigint[],
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  last_used_at timestamptz,
  revoked_at timestamptz
);

-- failed sign-ins per account and per address, shared by every instance
CREATE TABLE sign_in_failures (
  subject text PRIMARY KEY,
  failures integer NOT NULL,
  last_failure_at timestamptz NOT NULL,
  locked_until timestamptz
);

CREATE TABLE audit_log (
  seq bigint PRIMARY KEY,
  at timestamptz NOT NULL,
  actor jsonb NOT NULL,
  operation text NOT NULL,
  target jsonb NOT NULL,
  before jsonb,
  after jsonb,
  address text,
  user_agent text,
  outcome text NOT NULL CHECK (outcome IN ('ok', 'refused')),
  prev_hash text NOT NULL,
  hash text NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
-- the trail's filters: an enterprise's rows, an actor's rows, newest first
CREATE INDEX audit_log_enterprise ON audit_log ((target->>'enterpriseId'), seq);
CREATE INDEX audit_log_actor ON audit_log ((actor->>'id'), seq);

-- the chain's head (the last row's seq and hash), locked by each append so rows chain in order; and the
-- anchor the retention job leaves: the hash of the last row it pruned
CREATE TABLE audit_chain (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  head_seq bigint NOT NULL,
  head_hash text NOT NULL,
  anchor_seq bigint NOT NULL,
  anchor_hash text NOT NULL
);
INSERT INTO audit_chain (head_seq, head_hash, anchor_seq, anchor_hash) VALUES (0, 'genesis', 0, 'genesis');

-- Append-only, against the platform's own user too: only the retention job's pruning (which sets
-- earshot.audit_prune in its transaction) may delete, and nothing may update.
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('earshot.audit_prune', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP;
END;
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
