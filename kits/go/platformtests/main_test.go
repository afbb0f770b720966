// Package platformtests is the Go kit's tests against a real Earshot platform, which the harness
// platformtest starts once for the package (and once more for a test that needs other settings).
package platformtests

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
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

// testPlatform is the package's one platform (platformtest.Shared).
func testPlatform(t *testing.T) *platformtest.Platform {
	t.Helper()
	return platformtest.Shared(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	platformtest.StopShared()
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
