-- the health of every push URL: failing, disabled after a while or at once on 410 Gone, enabled again by an operator
--
-- A row appears with a URL's first attempt. The state is derived: disabled while disabled_at is set
-- (until an operator enables it again), failing while consecutive_failures > 0, healthy otherwise.

CREATE TABLE push_endpoints (
  url text PRIMARY KEY,
  consecutive_failures integer NOT NULL DEFAULT 0,
  failing_since timestamptz,
  last_success_at timestamptz,
  last_failure_at timestamptz,
  last_error text,
  disabled_at timestamptz,
  disabled_reason text,
  CHECK ((failing_since IS NULL) = (consecutive_failures = 0)),
  CHECK ((disabled_at IS NULL) = (disabled_reason IS NULL))
);

CREATE INDEX push_endpoints_disabled ON push_endpoints (url) WHERE disabled_at IS NOT NULL;

CREATE INDEX enterprises_by_push_url ON enterprises (push_url) WHERE push_url IS NOT NULL;

ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_outcome_check,
ADD CONSTRAINT delivery_attempts_outcome_check CHECK (outcome IN ('acked', 'failed', 'aborted', 'gone'))
NOT VALID;
