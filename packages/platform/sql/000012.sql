-- the operators' overview reads the last hour of push attempts without scanning them all

CREATE INDEX delivery_attempts_started ON delivery_attempts (started_at);
