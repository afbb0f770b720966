-- each enterprise's changes numbered 1, 2, 3… with no gap; unnumbered changes wait in a small queue table of their own
--
-- Migration 14: each enterprise's changes are numbered 1, 2, 3… with no gap, so that nothing about other
-- enterprises can be read from a partner's seqs or from where its cursor ends. Unnumbered changes wait in
-- a queue table of their own (inserted by the triggers, deleted when numbered), so the feed's table is
-- only ever appended to and the churn stays in a table as small as the changes in flight. Numbering keeps
-- its rule: only the changes of transactions older than the oldest still running, in transaction id order
-- (per enterprise now), one numberer at a time under the lock of change_feed_head's row — whose last_seq
-- stays the last seq of the global numbering, which cursors given before this migration name.
--
-- read_changes(): one read of the feed, one round trip: the enterprise's head as the read begins (a cursor the feed gave is
-- never past it), the numbering of what is ready, then the page after `after` and the enterprise's lag.
-- A page is the seqs right after the cursor (an enterprise's seqs have no gap, so both bounds are known),
-- read by an index range scan and a lookup of each recording: a plan right whatever the feed's size, kept
-- for the session (plan_cache_mode), where PostgreSQL would plan the statement again at every call. Each
-- candidate is measured by octet_length, which reads a stored text's length without reading the text; the
-- page keeps its first change, and the next ones while their size stays within `budget` (a text not sent
-- is never read). The first row carries head, numbered and lag even when no change is ready.

LOCK TABLE recordings IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE recording_change_queue (
  queued_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  enterprise_id bigint NOT NULL,
  audio_id text NOT NULL,
  change text NOT NULL CHECK (change IN ('created', 'transcript_added', 'updated', 'deleted')),
  at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX recording_change_queue_order ON recording_change_queue (txid, queued_id);

CREATE INDEX recording_change_queue_by_enterprise ON recording_change_queue (enterprise_id, at);

INSERT INTO recording_change_queue (txid, enterprise_id, audio_id, change, at)
SELECT txid, enterprise_id, audio_id, change, at FROM recording_changes WHERE seq IS NULL
 ORDER BY txid, change_id;

DELETE FROM recording_changes WHERE seq IS NULL;

DROP INDEX recording_changes_unnumbered;

ALTER TABLE recording_changes RENAME COLUMN seq TO legacy_seq;

ALTER TABLE recording_changes DROP CONSTRAINT recording_changes_seq_key;

DROP INDEX recording_changes_feed;

CREATE INDEX recording_changes_by_legacy_seq ON recording_changes (enterprise_id, legacy_seq)
WHERE legacy_seq IS NOT NULL;

ALTER TABLE recording_changes DROP COLUMN txid, ADD COLUMN seq bigint;

UPDATE recording_changes c SET seq = n.rank
 FROM (SELECT change_id, row_number() OVER (PARTITION BY enterprise_id ORDER BY legacy_seq) AS rank
         FROM recording_changes) n
WHERE c.change_id = n.change_id;

ALTER TABLE recording_changes ALTER COLUMN seq SET NOT NULL;

ALTER TABLE recording_changes ADD CONSTRAINT recording_changes_feed UNIQUE (enterprise_id, seq);

CREATE TABLE change_feed_heads (enterprise_id bigint PRIMARY KEY, last_seq bigint NOT NULL);

INSERT INTO change_feed_heads (enterprise_id, last_seq)
SELECT enterprise_id, max(seq) FROM recording_changes GROUP BY enterprise_id;

CREATE OR REPLACE FUNCTION recordings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  taken text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT a.audio_id INTO taken FROM added a JOIN recording_tombstones t USING (audio_id) LIMIT 1;
    IF taken IS NOT NULL THEN
      RAISE EXCEPTION 'the audioId of a deleted recording is not reused'
        USING ERRCODE = '23505', DETAIL = format('Key (audio_id)=(%s) already exists.', taken);
    END IF;
    INSERT INTO recording_change_queue (enterprise_id, audio_id, change)
      SELECT enterprise_id, audio_id, 'created' FROM added ORDER BY audio_id;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO recording_change_queue (enterprise_id, audio_id, change)
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
    INSERT INTO recording_change_queue (enterprise_id, audio_id, change)
      SELECT enterprise_id, audio_id, 'deleted' FROM removed ORDER BY audio_id;
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION number_recording_changes(batch bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  numbered bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM recording_change_queue WHERE txid < pg_snapshot_xmin(pg_current_snapshot())) THEN
    RETURN 0;
  END IF;
  PERFORM 1 FROM change_feed_head FOR UPDATE;
  WITH taken AS (
         DELETE FROM recording_change_queue q
          USING (SELECT queued_id FROM recording_change_queue
                  WHERE txid < pg_snapshot_xmin(pg_current_snapshot())
                  ORDER BY txid, queued_id LIMIT batch) x
          WHERE q.queued_id = x.queued_id
         RETURNING q.*),
       ranked AS (
         SELECT t.*, row_number() OVER (PARTITION BY t.enterprise_id ORDER BY t.txid, t.queued_id) AS rank,
                count(*) OVER (PARTITION BY t.enterprise_id) AS n
           FROM taken t),
       heads AS (
         INSERT INTO change_feed_heads AS h (enterprise_id, last_seq)
         SELECT enterprise_id, count(*) FROM taken GROUP BY enterprise_id ORDER BY enterprise_id
         ON CONFLICT (enterprise_id) DO UPDATE SET last_seq = h.last_seq + excluded.last_seq
         RETURNING h.enterprise_id, h.last_seq),
       added AS (
         INSERT INTO recording_changes (enterprise_id, seq, audio_id, change, at)
         SELECT r.enterprise_id, h.last_seq - r.n + r.rank, r.audio_id, r.change, r.at
           FROM ranked r JOIN heads h USING (enterprise_id)
          ORDER BY r.enterprise_id, r.rank
         RETURNING 1)
  SELECT count(*) INTO numbered FROM added;
  RETURN numbered;
END $$;

CREATE FUNCTION read_changes(enterprise bigint, after bigint, size integer, budget bigint,
                                 overhead integer, batch bigint)
RETURNS TABLE (head bigint, numbered bigint, lag_seconds float8, seq bigint, audio_id text, change text,
               at timestamptz, present boolean, candidates bigint, device_uid text, title text,
               denoise_url text, record_duration bigint, transcript_id bigint, transcript_text text,
               transcript_sentences text, duration_ms bigint, words_count bigint)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  known bigint;
  done bigint;
BEGIN
  SELECT h.last_seq INTO known FROM change_feed_heads h WHERE h.enterprise_id = enterprise;
  done := number_recording_changes(batch);
  RETURN QUERY
    WITH candidates AS (
           SELECT c.seq, c.audio_id, c.change, c.at, r.audio_id IS NOT NULL AS present, r.device_uid, r.title,
                  r.denoise_url, r.record_duration, r.transcript_id, r.transcript_text, r.transcript_sentences,
                  r.duration_ms, r.words_count,
                  overhead + coalesce(octet_length(r.title), 0) + coalesce(octet_length(r.transcript_text), 0)
                    + coalesce(octet_length(r.transcript_sentences), 0) * 5 / 4 AS bytes
             FROM recording_changes c
                  LEFT JOIN LATERAL (SELECT * FROM recordings WHERE audio_id = c.audio_id LIMIT 1) r ON true
            WHERE c.enterprise_id = enterprise AND c.seq > after AND c.seq <= after + size),
         measured AS (
           SELECT *, sum(bytes) OVER (ORDER BY seq) AS upto, row_number() OVER (ORDER BY seq) AS n,
                  count(*) OVER () AS candidates
             FROM candidates),
         lag AS (
           SELECT extract(epoch FROM now() - min(q.at))::float8 AS lag_seconds FROM recording_change_queue q
            WHERE q.enterprise_id = enterprise AND q.txid >= pg_snapshot_xmin(pg_current_snapshot()))
    SELECT coalesce(known, 0), done, lag.lag_seconds, m.seq, m.audio_id, m.change, m.at, m.present, m.candidates,
           m.device_uid, m.title, m.denoise_url, m.record_duration, m.transcript_id, m.transcript_text,
           m.transcript_sentences, m.duration_ms, m.words_count
      FROM lag LEFT JOIN measured m ON m.n = 1 OR m.upto <= budget
     ORDER BY m.seq;
END $$;
