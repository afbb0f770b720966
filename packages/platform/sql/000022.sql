-- media uploads: each upload claims its key before its first byte is stored, until the recording names the file

CREATE TABLE media_uploads (
  store_key text PRIMARY KEY,
  enterprise_id bigint NOT NULL,
  audio_id text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);

CREATE INDEX media_uploads_by_age ON media_uploads ((coalesce(finished_at, started_at)));
