-- the push queue's statements read only the rows they need whatever the planner's statistics say: a
-- recording's next event found by the recording, claims by a due index of their own, no index over
-- several queue states for a statement to wander into

-- The queue's partial indexes are small between bursts and large during them, and the planner reads their
-- size from statistics taken when they were nearly empty (a VACUUM of an idle queue counts none). An
-- index over several states (the backlog's) was then the cheapest-looking way for every statement naming
-- one of those states, and was read whole: a settle of 15 deliveries took 9 ms instead of under 1, and the
-- look-up below 5 ms. Each index below matches one statement's conditions, or (the backlog's) is no longer
-- partial, so that its size is the table's and no statement takes it for small.

-- Claims: the ready deliveries in due order. In-flight and acknowledged ones are found by
-- deliveries_sweepable, held ones by deliveries_held. (A delivery's entries in this index and the backlog's,
-- together, are as many as before: two fewer here, two more there.)
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (due_at) WHERE state = 'pending';

-- An enterprise's backlog (waiting to be pushed, or being pushed), counted without reading anyone else's.
DROP INDEX deliveries_backlog;
CREATE INDEX deliveries_backlog ON deliveries (enterprise_id, state);

-- When an earlier delivery finishes, deliveries_next_in_order looks for the recording's next queued delivery to
-- the endpoint. With the index on endpoint_id alone it read every delivery queued for the endpoint (in an
-- ordered backlog, one per recording) to find the recording's: each acknowledgement cost in proportion to the
-- backlog, and the batch recording acknowledgements held its row locks meanwhile. Keyed by endpoint and
-- recording, the look-up reads the recording's own; the endpoint's queue (its count, its cancellation) is
-- still read by the leading column.
DROP INDEX deliveries_queued;
CREATE INDEX deliveries_queued ON deliveries (endpoint_id, audio_id, delivery_id) WHERE state = 'queued';

-- The same function as 000020.sql's; the promotion names the endpoint and recording as well as the delivery,
-- so that the planner can use the index above for it whatever its statistics say of the queue's size.
CREATE OR REPLACE FUNCTION deliveries_next_in_order() RETURNS trigger LANGUAGE plpgsql AS $next$
DECLARE
  next_id bigint;
  open_ahead boolean;
BEGIN
  FOR attempt IN 1..2 LOOP
    SELECT min(delivery_id) INTO next_id FROM deliveries
     WHERE endpoint_id = NEW.endpoint_id AND audio_id = NEW.audio_id AND state = 'queued';
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
       WHERE q.endpoint_id = NEW.endpoint_id AND q.audio_id = NEW.audio_id AND q.delivery_id = next_id
         AND q.state = 'queued';
      RETURN NULL;
    END IF;
    EXIT WHEN attempt = 2
           OR NOT pg_try_advisory_xact_lock(hashtextextended('deliveries_next_in_order ' || NEW.endpoint_id || ' ' || NEW.audio_id, 0));
  END LOOP;
  INSERT INTO delivery_rechecks (endpoint_id, audio_id) VALUES (NEW.endpoint_id, NEW.audio_id);
  RETURN NULL;
END
$next$;
