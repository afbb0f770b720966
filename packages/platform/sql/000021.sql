-- requests' issuedAt required per enterprise; a change reaches every instance's credentials cache by NOTIFY

ALTER TABLE enterprises ADD COLUMN require_issued_at boolean NOT NULL DEFAULT false;

DROP TRIGGER enterprises_credentials_changed ON enterprises;

CREATE TRIGGER enterprises_credentials_changed
AFTER INSERT OR DELETE OR UPDATE OF enterprise_id, disabled_at, require_issued_at ON enterprises
FOR EACH ROW EXECUTE FUNCTION earshot_credentials_changed();
