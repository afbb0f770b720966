package earshot

import (
	"strings"
	"testing"
)

func TestConfigFromEnvDefaultsAsTheOtherKits(t *testing.T) {
	t.Setenv("EARSHOT_BASE_URL", "")
	t.Setenv("EARSHOT_KEY_VERSION", "")
	t.Setenv("EARSHOT_ENTERPRISE_ID", "1")
	t.Setenv("EARSHOT_SECRET", testSecret)
	cfg, err := ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BaseURL != "http://127.0.0.1:8080" || cfg.KeyVersion != 1 || cfg.EnterpriseID != 1 || cfg.Secret != testSecret {
		t.Fatalf("got %+v", cfg)
	}
	if _, err := NewClient(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestConfigFromEnvSaysWhatToSet(t *testing.T) {
	cases := []struct{ enterpriseID, keyVersion, secret, want string }{
		{"", "", testSecret, "EARSHOT_ENTERPRISE_ID is not set"},
		{"1", "", "", "EARSHOT_SECRET is not set"},
		{"one", "", testSecret, `EARSHOT_ENTERPRISE_ID must be a whole number from 1 to 2^53-1; got "one"`},
		{"1", "v2", testSecret, `EARSHOT_KEY_VERSION must be a whole number from 1 to 2^31-1 (or unset for 1); got "v2"`},
		{"1", "0", testSecret, "EARSHOT_KEY_VERSION must be a whole number"},
	}
	for _, c := range cases {
		t.Setenv("EARSHOT_ENTERPRISE_ID", c.enterpriseID)
		t.Setenv("EARSHOT_KEY_VERSION", c.keyVersion)
		t.Setenv("EARSHOT_SECRET", c.secret)
		_, err := ConfigFromEnv()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "strconv") {
			t.Errorf("%+v: got %v, want %q", c, err, c.want)
		}
	}
}
