// Package platformtests is the Go kit's tests against a real Earshot platform, which the harness
// platformtest starts once for the package (and once more for a test that needs other settings).
package platformtests

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/earshot/earshot/kits/go/platformtests/platformtest"
)

// The partner API's paths, as protocol's contract.json names them (the kit's contract test holds
// the kit to the same).
const (
	tokenPath  = "/openapi/v1/token"
	audiosPath = "/openapi/v1/audios"
)

var shared struct {
	once     sync.Once
	platform *platformtest.Platform
	err      error
}

// testPlatform is one platform for the package's tests, started when the first asks for it; the
// test is skipped when no platform can run here.
func testPlatform(t *testing.T) *platformtest.Platform {
	t.Helper()
	if why := platformtest.Missing(); why != "" {
		t.Skip("no platform to test against: " + why)
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shared.platform, shared.err = platformtest.Start(ctx)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.platform
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.platform != nil {
		shared.platform.Stop()
	}
	os.Exit(code)
}

// testContext is bounded well under the suite's -timeout, so that a hang fails the one test.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// uniqueID is 8 random hex digits, for the audioIds of one test.
func uniqueID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
