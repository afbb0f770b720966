-- a disabled push URL's deliveries are held out of the due path; enabling it resumes those that failed since it began failing

ALTER TABLE deliveries DROP CONSTRAINT deliveries_state_check,
ADD CONSTRAINT deliveries_state_check CHECK (state IN ('pending', 'in_flight', 'held', 'acked', 'confirmed', 'failed', 'unconfirmed', 'cancelled'));

CREATE OR REPLACE FUNCTION deliveries_transition_guard() RETURNS trigger LANGUAGE plpgsql AS $guard$
BEGIN
  IF OLD.state || '>' || NEW.state = ANY ('{acked>cancelled,acked>confirmed,acked>pending,acked>unconfirmed,failed>cancelled,failed>pending,held>cancelled,held>confirmed,held>pending,in_flight>acked,in_flight>cancelled,in_flight>confirmed,in_flight>failed,in_flight>pending,pending>cancelled,pending>confirmed,pending>held,pending>in_flight,unconfirmed>cancelled,unconfirmed>confirmed,unconfirmed>pending}'::text[]) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'illegal transition of a row of %: % → %', TG_TABLE_NAME, OLD.state, NEW.state
    USING ERRCODE = 'EQ001';
END
$guard$;

DROP TRIGGER IF EXISTS deliveries_transition_guard ON deliveries;

CREATE TRIGGER deliveries_transition_guard BEFORE UPDATE OF state ON deliveries FOR EACH ROW
WHEN (OLD.state IS DISTINCT FROM NEW.state AND NOT coalesce(OLD.state || '>' || NEW.state = ANY ('{acked>cancelled,acked>confirmed,acked>pending,acked>unconfirmed,failed>cancelled,failed>pending,held>cancelled,held>confirmed,held>pending,in_flight>acked,in_flight>cancelled,in_flight>confirmed,in_flight>failed,in_flight>pending,pending>cancelled,pending>confirmed,pending>held,pending>in_flight,unconfirmed>cancelled,unconfirmed>confirmed,unconfirmed>pending}'::text[]), false))
EXECUTE FUNCTION deliveries_transition_guard();

ALTER TABLE deliveries ADD COLUMN failed_at timestamptz;

UPDATE deliveries d SET failed_at = (SELECT max(a.started_at + a.duration_ms * interval '1 millisecond')
                                      FROM delivery_attempts a WHERE a.delivery_id = d.delivery_id)
WHERE state = 'failed';

DROP INDEX deliveries_due;

CREATE INDEX deliveries_due ON deliveries (due_at) WHERE due_at IS NOT NULL AND state <> 'held';

CREATE INDEX deliveries_held ON deliveries (group_key, due_at) WHERE state = 'held';

CREATE INDEX deliveries_ready_by_group ON deliveries (group_key) WHERE state = 'pending' AND group_key IS NOT NULL;

UPDATE deliveries SET state = 'held'
WHERE state = 'pending' AND group_key IN (SELECT e.enterprise_id::text FROM push_endpoints p
                                            JOIN enterprises e ON e.push_url = p.url
                                           WHERE p.disabled_at IS NOT NULL);
