-- deliveries as a fenced queue: claim numbers, groups, receipt times, a transition guard; attempts numbered

ALTER TABLE deliveries RENAME COLUMN attempt_count TO claim_no;

ALTER TABLE deliveries ADD COLUMN claimed_at timestamptz, ADD COLUMN received_at timestamptz,
ADD COLUMN group_key text;

UPDATE deliveries SET group_key = enterprise_id::text;

ALTER TABLE deliveries DROP CONSTRAINT deliveries_state_check, DROP CONSTRAINT deliveries_check,
ADD CONSTRAINT deliveries_state_check CHECK (state IN ('pending', 'in_flight', 'acked', 'confirmed', 'failed', 'unconfirmed', 'cancelled')),
ADD CONSTRAINT deliveries_due_check CHECK ((due_at IS NULL) = (state IN ('confirmed', 'failed', 'unconfirmed', 'cancelled')));

CREATE OR REPLACE FUNCTION deliveries_transition_guard() RETURNS trigger LANGUAGE plpgsql AS $guard$
BEGIN
  IF OLD.state || '>' || NEW.state = ANY ('{acked>cancelled,acked>confirmed,acked>pending,acked>unconfirmed,failed>cancelled,failed>pending,in_flight>acked,in_flight>cancelled,in_flight>confirmed,in_flight>failed,in_flight>pending,pending>cancelled,pending>confirmed,pending>in_flight,unconfirmed>cancelled,unconfirmed>confirmed,unconfirmed>pending}'::text[]) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'illegal transition of a row of %: % → %', TG_TABLE_NAME, OLD.state, NEW.state
    USING ERRCODE = 'EQ001';
END
$guard$;

DROP TRIGGER IF EXISTS deliveries_transition_guard ON deliveries;

CREATE TRIGGER deliveries_transition_guard BEFORE UPDATE OF state ON deliveries FOR EACH ROW
WHEN (OLD.state IS DISTINCT FROM NEW.state AND NOT coalesce(OLD.state || '>' || NEW.state = ANY ('{acked>cancelled,acked>confirmed,acked>pending,acked>unconfirmed,failed>cancelled,failed>pending,in_flight>acked,in_flight>cancelled,in_flight>confirmed,in_flight>failed,in_flight>pending,pending>cancelled,pending>confirmed,pending>in_flight,unconfirmed>cancelled,unconfirmed>confirmed,unconfirmed>pending}'::text[]), false))
EXECUTE FUNCTION deliveries_transition_guard();

ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey,
DROP CONSTRAINT delivery_attempts_outcome_check;

ALTER TABLE delivery_attempts RENAME COLUMN attempt_no TO claim_no;

ALTER TABLE delivery_attempts ADD COLUMN attempt_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
ADD COLUMN stale boolean NOT NULL DEFAULT false,
ADD CONSTRAINT delivery_attempts_outcome_check CHECK (outcome IN ('acked', 'failed', 'aborted'));

CREATE INDEX delivery_attempts_by_delivery ON delivery_attempts (delivery_id, claim_no, attempt_id);
