-- receiver checks: the receipt callbacks of a check's pushes, recorded apart from real receipts

CREATE TABLE receiver_checks (
  audio_id text PRIMARY KEY,
  enterprise_id bigint NOT NULL REFERENCES enterprises (enterprise_id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  answered_at timestamptz,
  called_back_at timestamptz,
  before_answer boolean
);

CREATE INDEX receiver_checks_by_age ON receiver_checks (created_at);
