-- the change feed: every change of a recording, numbered once its transaction and every older one finished; deletions leave tombstones
--
-- Migration 10. Triggers on recordings write one row per change to recording_changes,
-- whatever writes the recordings, in the writer's transaction, with its transaction id and no seq yet.
-- Writers take no shared lock, so they commit as concurrently as before. Changes are numbered later, by
-- number_recording_changes (called before the feed is read): only those of transactions older than the
-- oldest still running (pg_snapshot_xmin), which are all committed or rolled back, and in transaction id
-- order. A transaction that finishes later has a larger id than every change numbered so far, so its
-- changes are numbered after them: a reader never passes a change that commits later, and a rolled-back
-- transaction's changes are never numbered (no gap).

LOCK TABLE recordings IN SHARE ROW EXCLUSIVE MODE;

ALTER TABLE deliveries DROP CONSTRAINT deliveries_audio_id_fkey;

ALTER TABLE receipts DROP CONSTRAINT receipts_audio_id_fkey;

ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_type_check,
ADD CONSTRAINT deliveries_event_type_check CHECK (event_type IN ('recording.audio_ready', 'recording.transcript_ready', 'recording.deleted'));

CREATE TABLE recording_tombstones (
  audio_id text PRIMARY KEY,
  enterprise_id bigint NOT NULL,
  deleted_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE recording_changes (
  change_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  seq bigint UNIQUE,
  enterprise_id bigint NOT NULL,
  audio_id text NOT NULL,
  change text NOT NULL CHECK (change IN ('created', 'transcript_added', 'updated', 'deleted')),
  at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX recording_changes_feed ON recording_changes (enterprise_id, seq);

CREATE INDEX recording_changes_unnumbered ON recording_changes (txid, change_id) WHERE seq IS NULL;

CREATE TABLE change_feed_head (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  last_seq bigint NOT NULL
);

CREATE FUNCTION number_recording_changes(batch bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  head bigint;
  numbered bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM recording_changes WHERE seq IS NULL) THEN
    RETURN 0;
  END IF;
  SELECT last_seq INTO head FROM change_feed_head FOR UPDATE;
  UPDATE recording_changes c SET seq = head + n.rank
    FROM (SELECT change_id, row_number() OVER (ORDER BY txid, change_id) AS rank
            FROM recording_changes
           WHERE seq IS NULL AND txid < pg_snapshot_xmin(pg_current_snapshot())
           ORDER BY txid, change_id LIMIT batch) n
   WHERE c.change_id = n.change_id;
  GET DIAGNOSTICS numbered = ROW_COUNT;
  IF numbered > 0 THEN
    UPDATE change_feed_head SET last_seq = head + numbered;
  END IF;
  RETURN numbered;
END $$;

CREATE FUNCTION recordings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  taken text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT a.audio_id INTO taken FROM added a JOIN recording_tombstones t USING (audio_id) LIMIT 1;
    IF taken IS NOT NULL THEN
      RAISE EXCEPTION 'the audioId of a deleted recording is not reused'
        USING ERRCODE = '23505', DETAIL = format('Key (audio_id)=(%s) already exists.', taken);
    END IF;
    INSERT INTO recording_changes (enterprise_id, audio_id, change)
      SELECT enterprise_id, audio_id, 'created' FROM added ORDER BY audio_id;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO recording_changes (enterprise_id, audio_id, change)
      SELECT n.enterprise_id, n.audio_id,
             CASE WHEN n.transcript_added_at IS DISTINCT FROM o.transcript_added_at
                  THEN 'transcript_added' ELSE 'updated' END
        FROM before o JOIN after n USING (audio_id)
       WHERE (o.enterprise_id, o.device_uid, o.title, o.recorded_at, o.denoise_url, o.record_duration,
              o.transcript_id, o.transcript_text, o.transcript_sentences, o.duration_ms, o.words_count,
              o.transcript_added_at)
             IS DISTINCT FROM
             (n.enterprise_id, n.device_uid, n.title, n.recorded_at, n.denoise_url, n.record_duration,
              n.transcript_id, n.transcript_text, n.transcript_sentences, n.duration_ms, n.words_count,
              n.transcript_added_at)
       ORDER BY n.audio_id;
  ELSE
    INSERT INTO recording_changes (enterprise_id, audio_id, change)
      SELECT enterprise_id, audio_id, 'deleted' FROM removed ORDER BY audio_id;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER recordings_changed_inserted AFTER INSERT ON recordings REFERENCING NEW TABLE AS added
FOR EACH STATEMENT EXECUTE FUNCTION recordings_changed();

CREATE TRIGGER recordings_changed_updated AFTER UPDATE ON recordings
REFERENCING OLD TABLE AS before NEW TABLE AS after
FOR EACH STATEMENT EXECUTE FUNCTION recordings_changed();

CREATE TRIGGER recordings_changed_deleted AFTER DELETE ON recordings REFERENCING OLD TABLE AS removed
FOR EACH STATEMENT EXECUTE FUNCTION recordings_changed();

INSERT INTO recording_changes (seq, enterprise_id, audio_id, change, at)
SELECT row_number() OVER (ORDER BY created_at, audio_id), enterprise_id, audio_id, 'created',
       created_at
  FROM recordings;

INSERT INTO change_feed_head (last_seq) SELECT count(*) FROM recordings;
