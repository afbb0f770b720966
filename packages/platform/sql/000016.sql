-- stored audio: each recording's current file, files to remove once their change commits, the keys signing media links

ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_type_check,
ADD CONSTRAINT deliveries_event_type_check CHECK (event_type IN ('recording.audio_ready', 'recording.transcript_ready', 'recording.deleted', 'recording.updated'));

CREATE TABLE recording_audio (
  audio_id text PRIMARY KEY REFERENCES recordings ON DELETE CASCADE,
  enterprise_id bigint NOT NULL,
  store_key text NOT NULL UNIQUE,
  sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  bytes bigint NOT NULL CHECK (bytes >= 0),
  content_type text NOT NULL,
  stored_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE media_garbage (
  store_key text PRIMARY KEY,
  since timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE media_link_keys (
  key_id integer PRIMARY KEY CHECK (key_id > 0),
  secret bytea NOT NULL CHECK (octet_length(secret) = 32),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION recording_audio_replaced() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR OLD.store_key IS DISTINCT FROM NEW.store_key THEN
    INSERT INTO media_garbage (store_key) VALUES (OLD.store_key) ON CONFLICT DO NOTHING;
    PERFORM pg_notify('earshot_media_garbage', '');
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER recording_audio_replaced AFTER UPDATE OR DELETE ON recording_audio
  FOR EACH ROW EXECUTE FUNCTION recording_audio_replaced();

-- An operator's external denoiseUrl in place of stored audio: the file goes (recording_audio_replaced).
CREATE FUNCTION recording_audio_released() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM recording_audio WHERE audio_id = NEW.audio_id;
  RETURN NULL;
END $$;

CREATE TRIGGER recording_audio_released AFTER UPDATE OF denoise_url ON recordings
  FOR EACH ROW WHEN (OLD.denoise_url LIKE 'earshot-media:%' AND NEW.denoise_url NOT LIKE 'earshot-media:%')
  EXECUTE FUNCTION recording_audio_released();
