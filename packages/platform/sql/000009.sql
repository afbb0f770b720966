-- recording counters per enterprise and UTC minute: a window's ragged edges count a minute's recordings at most

LOCK TABLE recordings IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE recording_minute_counts (
  enterprise_id bigint NOT NULL,
  bucket timestamptz NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (enterprise_id, bucket)
);

CREATE OR REPLACE FUNCTION count_recordings(enterprise_ids bigint[], device_uids text[], recorded_ats timestamptz[],
                                 delta bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO recording_day_counts AS c (enterprise_id, bucket, n)
    SELECT e, utc_floor('day', t), delta * count(*)
      FROM unnest(enterprise_ids, device_uids, recorded_ats) AS x(e, d, t)
     GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (enterprise_id, bucket) DO UPDATE SET n = c.n + excluded.n;
  INSERT INTO recording_hour_counts AS c (enterprise_id, bucket, n)
    SELECT e, utc_floor('hour', t), delta * count(*)
      FROM unnest(enterprise_ids, device_uids, recorded_ats) AS x(e, d, t)
     GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (enterprise_id, bucket) DO UPDATE SET n = c.n + excluded.n;
  INSERT INTO recording_device_day_counts AS c (enterprise_id, device_uid, bucket, n)
    SELECT e, d, utc_floor('day', t), delta * count(*)
      FROM unnest(enterprise_ids, device_uids, recorded_ats) AS x(e, d, t)
     GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (enterprise_id, device_uid, bucket) DO UPDATE SET n = c.n + excluded.n;
  INSERT INTO recording_device_month_counts AS c (enterprise_id, device_uid, bucket, n)
    SELECT e, d, utc_floor('month', t), delta * count(*)
      FROM unnest(enterprise_ids, device_uids, recorded_ats) AS x(e, d, t)
     GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (enterprise_id, device_uid, bucket) DO UPDATE SET n = c.n + excluded.n;
  INSERT INTO recording_minute_counts AS c (enterprise_id, bucket, n)
    SELECT e, utc_floor('minute', t), delta * count(*)
      FROM unnest(enterprise_ids, device_uids, recorded_ats) AS x(e, d, t)
     GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (enterprise_id, bucket) DO UPDATE SET n = c.n + excluded.n;
END $$;

CREATE OR REPLACE FUNCTION recordings_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM count_recordings(array_agg(enterprise_id), array_agg(device_uid), array_agg(recorded_at), 1)
       FROM added HAVING count(*) > 0;
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM count_recordings(array_agg(enterprise_id), array_agg(device_uid), array_agg(recorded_at), -1)
       FROM removed HAVING count(*) > 0;
  ELSIF TG_OP = 'UPDATE' THEN
    PERFORM count_recordings(ARRAY[OLD.enterprise_id], ARRAY[OLD.device_uid], ARRAY[OLD.recorded_at], -1);
    PERFORM count_recordings(ARRAY[NEW.enterprise_id], ARRAY[NEW.device_uid], ARRAY[NEW.recorded_at], 1);
  ELSE
    DELETE FROM recording_day_counts; DELETE FROM recording_hour_counts; DELETE FROM recording_device_day_counts; DELETE FROM recording_device_month_counts; DELETE FROM recording_minute_counts;
  END IF;
  RETURN NULL;
END $$;

INSERT INTO recording_minute_counts (enterprise_id, bucket, n)
SELECT enterprise_id, utc_floor('minute', recorded_at), count(*)
  FROM recordings GROUP BY 1, 2;
