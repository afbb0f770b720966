-- partner self-service: what an attempt was answered, when a delivery was first attempted, portal links and
-- sessions

-- The first 4 KiB of the receiver's answer, for the partner to read why a push failed.
ALTER TABLE delivery_attempts ADD COLUMN answer text;

-- A delivery's first attempt (its start, and whether it was acknowledged), kept on the delivery so that the
-- service levels read one table. Deliveries of the last 8 days get theirs from their attempts.
ALTER TABLE deliveries ADD COLUMN first_attempt_at timestamptz, ADD COLUMN first_attempt_acked boolean;
UPDATE deliveries d SET first_attempt_at = a.started_at, first_attempt_acked = a.outcome = 'acked'
  FROM (SELECT DISTINCT ON (delivery_id) delivery_id, started_at, outcome FROM delivery_attempts
         WHERE outcome IN ('acked', 'failed') AND NOT stale AND started_at > now() - interval '8 days'
         ORDER BY delivery_id, claim_no, attempt_id) a
 WHERE a.delivery_id = d.delivery_id AND d.created_at > now() - interval '8 days';

-- An enterprise's backlog (waiting to be pushed, or being pushed), counted without reading anyone else's.
CREATE INDEX deliveries_backlog ON deliveries (enterprise_id) WHERE state IN ('pending', 'held', 'queued', 'in_flight');

-- A one-time link into the portal, keyed by the SHA-256 of its secret part: spent by the first GET.
CREATE TABLE portal_links (
  link_hash bytea PRIMARY KEY,
  enterprise_id bigint NOT NULL REFERENCES enterprises,
  access text NOT NULL CHECK (access IN ('view', 'manage')),
  -- An operator's read-only look at what the partner sees.
  operator_view boolean NOT NULL DEFAULT false,
  minted_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  spent_at timestamptz
);
CREATE INDEX portal_links_expiry ON portal_links (expires_at);

-- A portal session for one enterprise, keyed by the SHA-256 of its cookie.
CREATE TABLE portal_sessions (
  session_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  token_hash bytea NOT NULL UNIQUE,
  enterprise_id bigint NOT NULL REFERENCES enterprises,
  access text NOT NULL CHECK (access IN ('view', 'manage')),
  operator_view boolean NOT NULL DEFAULT false,
  minted_by text NOT NULL,
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  ended_at timestamptz,
  address text,
  user_agent text
);
CREATE INDEX portal_sessions_by_enterprise ON portal_sessions (enterprise_id, session_id);
CREATE INDEX portal_sessions_expiry ON portal_sessions (expires_at);

-- The service levels' rollup: each complete hour of an enterprise's deliveries (by creation), its first
-- attempts' and receipts' latencies counted by value (whole milliseconds under a second, three significant
-- digits above), and the share of first attempts acknowledged. Recounted when a delivery of that hour is
-- attempted or confirmed; delivery_level_checks holds how far that has been looked for.
CREATE TABLE delivery_level_hours (
  enterprise_id bigint NOT NULL REFERENCES enterprises,
  hour_start timestamptz NOT NULL,
  first_ms jsonb NOT NULL,
  first_acked integer NOT NULL,
  receipt_ms jsonb NOT NULL,
  counted_at timestamptz NOT NULL,
  PRIMARY KEY (enterprise_id, hour_start)
);
CREATE TABLE delivery_level_checks (
  enterprise_id bigint PRIMARY KEY REFERENCES enterprises,
  checked_at timestamptz NOT NULL
);
