-- partners see when each recording was made: the change feed reads recorded_at with the rest of the recording

DROP FUNCTION read_changes(bigint, bigint, integer, bigint, integer, bigint);

CREATE FUNCTION read_changes(enterprise bigint, after bigint, size integer, budget bigint,
                                 overhead integer, batch bigint)
RETURNS TABLE (head bigint, numbered bigint, lag_seconds float8, seq bigint, audio_id text, change text,
               at timestamptz, present boolean, candidates bigint, device_uid text, title text,
               recorded_at timestamptz,
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
                  r.recorded_at,
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
           m.device_uid, m.title, m.recorded_at, m.denoise_url, m.record_duration, m.transcript_id, m.transcript_text,
           m.transcript_sentences, m.duration_ms, m.words_count
      FROM lag LEFT JOIN measured m ON m.n = 1 OR m.upto <= budget
     ORDER BY m.seq;
END $$;
