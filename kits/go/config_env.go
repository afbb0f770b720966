package earshot

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The defaults of ConfigFromEnv, as in the Node and Python kits: a platform on this machine
// (`npm start` in the Earshot checkout) and the first key version.
const (
	DefaultBaseURL    = "http://127.0.0.1:8080"
	DefaultKeyVersion = 1
)

// ConfigFromEnv reads the variables the other kits read: EARSHOT_BASE_URL (default
// http://127.0.0.1:8080), EARSHOT_ENTERPRISE_ID and EARSHOT_SECRET (required), and
// EARSHOT_KEY_VERSION (default 1). An error names the variable to set or correct.
func ConfigFromEnv() (Config, error) {
	cfg := Config{BaseURL: DefaultBaseURL, KeyVersion: DefaultKeyVersion}
	if base := env("EARSHOT_BASE_URL"); base != "" {
		cfg.BaseURL = base
	}
	enterpriseID := env("EARSHOT_ENTERPRISE_ID")
	if enterpriseID == "" {
		return Config{}, missingVariable("EARSHOT_ENTERPRISE_ID", "your enterprise's id, e.g. 1 for the demo enterprise")
	}
	id, err := strconv.ParseInt(enterpriseID, 10, 64)
	if err != nil || id < 1 || id > maxEnterpriseID {
		return Config{}, fmt.Errorf("earshot: EARSHOT_ENTERPRISE_ID must be a whole number from 1 to 2^53-1; got %q", enterpriseID)
	}
	cfg.EnterpriseID = id
	if keyVersion := env("EARSHOT_KEY_VERSION"); keyVersion != "" {
		version, err := strconv.Atoi(keyVersion)
		if err != nil || version < 1 || version > MaxKeyVersion {
			return Config{}, fmt.Errorf("earshot: EARSHOT_KEY_VERSION must be a whole number from 1 to 2^31-1 (or unset for 1); got %q", keyVersion)
		}
		cfg.KeyVersion = version
	}
	cfg.Secret = os.Getenv("EARSHOT_SECRET")
	if strings.TrimSpace(cfg.Secret) == "" {
		return Config{}, missingVariable("EARSHOT_SECRET", "your enterprise's secret, as your operator gave it")
	}
	return cfg, nil
}

// env is the variable without surrounding spaces ("" when unset).
func env(name string) string { return strings.TrimSpace(os.Getenv(name)) }

func missingVariable(name, what string) error {
	return fmt.Errorf("earshot: %s is not set: set it to %s", name, what)
}
