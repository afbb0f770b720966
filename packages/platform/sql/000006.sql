-- a change of an enterprise or its keys notifies every instance (cached credentials)

CREATE FUNCTION earshot_credentials_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('earshot_credentials',
                    (CASE WHEN TG_OP = 'DELETE' THEN OLD.enterprise_id ELSE NEW.enterprise_id END)::text);
  RETURN NULL;
END $$;

CREATE TRIGGER enterprises_credentials_changed
AFTER INSERT OR DELETE OR UPDATE OF enterprise_id, disabled_at ON enterprises
FOR EACH ROW EXECUTE FUNCTION earshot_credentials_changed();

CREATE TRIGGER enterprise_keys_credentials_changed AFTER INSERT OR UPDATE OR DELETE ON enterprise_keys
FOR EACH ROW EXECUTE FUNCTION earshot_credentials_changed();
