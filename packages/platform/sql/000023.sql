-- event types in a table: deliveries reference it, endpoints' event_types are checked against it, in place of lists written out in CHECK constraints

-- Every event type a push may carry, the protocol's EVENT_TYPES (storage/event-types.test.ts holds them
-- equal): a new one is a migration inserting its row.
CREATE TABLE event_types (
  name text PRIMARY KEY
);

INSERT INTO event_types (name)
VALUES ('recording.audio_ready'), ('recording.transcript_ready'), ('recording.deleted'), ('recording.updated');

-- NOT VALID: no scan of the deliveries while this transaction holds the table; the CHECK it replaces held
-- the existing rows to these names, and 000024.sql validates them in a transaction of its own.
ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_type_fkey FOREIGN KEY (event_type) REFERENCES event_types NOT VALID,
DROP CONSTRAINT deliveries_event_type_check;

ALTER TABLE endpoints DROP CONSTRAINT endpoints_event_types_check,
ADD CONSTRAINT endpoints_event_types_check CHECK (cardinality(event_types) > 0);

-- A foreign key of each element of endpoints.event_types: the names it reads are locked as a foreign key's
-- check locks its row, so that the event type cannot go before the endpoint commits.
CREATE FUNCTION endpoints_event_types_known() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  unknown text;
BEGIN
  PERFORM FROM event_types WHERE name = ANY (NEW.event_types) FOR KEY SHARE;
  SELECT string_agg(format('%L', u.name), ', ' ORDER BY u.n) INTO unknown
    FROM unnest(NEW.event_types) WITH ORDINALITY AS u(name, n)
   WHERE u.name IS NULL OR NOT EXISTS (SELECT FROM event_types e WHERE e.name = u.name);
  IF unknown IS NOT NULL THEN
    RAISE EXCEPTION 'endpoints.event_types names % not in the table event_types', unknown
      USING ERRCODE = 'foreign_key_violation', TABLE = 'endpoints', COLUMN = 'event_types',
            CONSTRAINT = 'endpoints_event_types_known',
            DETAIL = format('The event types are %s.', (SELECT string_agg(name, ', ' ORDER BY name) FROM event_types));
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER endpoints_event_types_known BEFORE INSERT OR UPDATE OF event_types ON endpoints
  FOR EACH ROW EXECUTE FUNCTION endpoints_event_types_known();

-- The other side of that foreign key: an event type an endpoint names stays (the deliveries' is a real one).
CREATE FUNCTION event_types_in_use() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.name = OLD.name THEN
    RETURN NEW;
  END IF;
  IF EXISTS (SELECT FROM endpoints WHERE OLD.name = ANY (event_types)) THEN
    RAISE EXCEPTION 'event type % is named by an endpoint''s event_types', OLD.name
      USING ERRCODE = 'foreign_key_violation', TABLE = 'event_types', CONSTRAINT = 'endpoints_event_types_known';
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER event_types_in_use BEFORE DELETE OR UPDATE OF name ON event_types
  FOR EACH ROW EXECUTE FUNCTION event_types_in_use();
