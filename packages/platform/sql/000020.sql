-- a recording's next event to an endpoint is let go under a lock, so that two earlier ones finished at once cannot both leave it queued

-- The promotion decides from its snapshot whether an earlier delivery of the recording to the endpoint is still
-- open. Two earlier ones finished by overlapping transactions would each see the other open, and neither let
-- the next go. So when it sees one open, it tries a transaction lock of the recording and endpoint and looks
-- again (a new statement, a new snapshot): of two such transactions, one trying after the other committed
-- sees it done. It never waits for the lock: a batch finishing deliveries of several recordings would take
-- such locks in the order of its rows, and two batches could wait for each other's. When it still cannot
-- let the next go, it marks the pair for the queue's sweep (REPAIR_SQL), which looks again once the mark is
-- committed: of transactions finishing earlier deliveries, the last to commit either lets the next go or
-- leaves a mark the sweep reads after they have all committed. Only when one is seen open — rare: two
-- earlier deliveries open at once come of replays and re-pushes — so the usual finish pays nothing. A queued
-- delivery cancelled (by an operator) lets the next go too. It is let go no sooner than an attempt of an
-- earlier delivery cancelled in flight may still be on the wire.
CREATE TABLE delivery_rechecks (
  recheck_id bigserial PRIMARY KEY,
  endpoint_id bigint NOT NULL,
  audio_id text NOT NULL
);

CREATE OR REPLACE FUNCTION deliveries_next_in_order() RETURNS trigger LANGUAGE plpgsql AS $next$
DECLARE
  next_id bigint;
  open_ahead boolean;
BEGIN
  FOR attempt IN 1..2 LOOP
    SELECT min(delivery_id) INTO next_id FROM deliveries
     WHERE audio_id = NEW.audio_id AND endpoint_id = NEW.endpoint_id AND state = 'queued';
    IF next_id IS NULL THEN
      RETURN NULL;
    END IF;
    SELECT EXISTS (SELECT 1 FROM deliveries b
                    WHERE b.audio_id = NEW.audio_id AND b.endpoint_id = NEW.endpoint_id AND b.delivery_id < next_id
                      AND b.state IN ('pending', 'held', 'in_flight')) INTO open_ahead;
    IF NOT open_ahead THEN
      UPDATE deliveries q
         SET state = 'pending',
             due_at = greatest(now(), (SELECT max(w.wire_until) FROM deliveries w
                                        WHERE w.audio_id = q.audio_id AND w.endpoint_id = q.endpoint_id
                                          AND w.delivery_id < q.delivery_id))
       WHERE q.delivery_id = next_id AND q.state = 'queued';
      RETURN NULL;
    END IF;
    EXIT WHEN attempt = 2
           OR NOT pg_try_advisory_xact_lock(hashtextextended('deliveries_next_in_order ' || NEW.endpoint_id || ' ' || NEW.audio_id, 0));
  END LOOP;
  INSERT INTO delivery_rechecks (endpoint_id, audio_id) VALUES (NEW.endpoint_id, NEW.audio_id);
  RETURN NULL;
END
$next$;

DROP TRIGGER deliveries_next_in_order ON deliveries;

CREATE TRIGGER deliveries_next_in_order AFTER UPDATE OF state ON deliveries FOR EACH ROW
WHEN (NEW.endpoint_id IS NOT NULL AND OLD.state IN ('pending', 'held', 'in_flight', 'queued')
      AND NEW.state NOT IN ('pending', 'held', 'in_flight', 'queued'))
EXECUTE FUNCTION deliveries_next_in_order();

-- What earlier versions may have left queued is looked at once.
INSERT INTO delivery_rechecks (endpoint_id, audio_id)
SELECT DISTINCT endpoint_id, audio_id FROM deliveries WHERE state = 'queued' AND endpoint_id IS NOT NULL;

-- The transitions of push/delivery-states.ts, which gained an operator's replay of a queued delivery and cancel of one,
-- and the recovery replay (the pairs allowed are the same), as transitionGuardSql writes them.
CREATE OR REPLACE FUNCTION deliveries_transition_guard() RETURNS trigger LANGUAGE plpgsql AS $guard$
BEGIN
  IF OLD.state || '>' || NEW.state = ANY ('{acked>cancelled,acked>confirmed,acked>pending,acked>unconfirmed,failed>cancelled,failed>pending,held>cancelled,held>confirmed,held>pending,in_flight>acked,in_flight>cancelled,in_flight>confirmed,in_flight>failed,in_flight>pending,pending>cancelled,pending>confirmed,pending>held,pending>in_flight,queued>cancelled,queued>pending,unconfirmed>cancelled,unconfirmed>confirmed,unconfirmed>pending}'::text[]) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'illegal transition of a row of %: % → %', TG_TABLE_NAME, OLD.state, NEW.state
    USING ERRCODE = 'EQ001';
END
$guard$;

DROP TRIGGER IF EXISTS deliveries_transition_guard ON deliveries;

CREATE TRIGGER deliveries_transition_guard BEFORE UPDATE OF state ON deliveries FOR EACH ROW
       WHEN (OLD.state IS DISTINCT FROM NEW.state AND NOT coalesce(OLD.state || '>' || NEW.state = ANY ('{acked>cancelled,acked>confirmed,acked>pending,acked>unconfirmed,failed>cancelled,failed>pending,held>cancelled,held>confirmed,held>pending,in_flight>acked,in_flight>cancelled,in_flight>confirmed,in_flight>failed,in_flight>pending,pending>cancelled,pending>confirmed,pending>held,pending>in_flight,queued>cancelled,queued>pending,unconfirmed>cancelled,unconfirmed>confirmed,unconfirmed>pending}'::text[]), false))
       EXECUTE FUNCTION deliveries_transition_guard();
