/** Migration 11: the health of every push URL (DESIGN.md §10; push/endpoint-health.ts). */
export function endpointHealthStatements(): string[] {
  return [
    // A row appears with a URL's first attempt. The state is derived: disabled while disabled_at is set
    // (until an operator enables it again), failing while consecutive_failures > 0, healthy otherwise.
    `CREATE TABLE push_endpoints (
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
      )`,
    // The push queue's paused groups: the enterprises whose push URL is disabled, on every claim.
    'CREATE INDEX push_endpoints_disabled ON push_endpoints (url) WHERE disabled_at IS NOT NULL',
    'CREATE INDEX enterprises_by_push_url ON enterprises (push_url) WHERE push_url IS NOT NULL',
    // An attempt answered 410 Gone disables its URL and does not count against the delivery's retry
    // schedule. Every existing row has one of the old outcomes, so the attempts need not be scanned.
    `ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_outcome_check,
       ADD CONSTRAINT delivery_attempts_outcome_check CHECK (outcome IN ('acked', 'failed', 'aborted', 'gone'))
       NOT VALID`,
  ]
}
