package platformtest

import (
	"context"
	"sync"
	"testing"
	"time"
)

var shared struct {
	once     sync.Once
	platform *Platform
	err      error
}

// Shared is one platform for a test binary, started when the first test asks for it; the test is
// skipped when no platform can run here. StopShared, from TestMain, stops it.
func Shared(t testing.TB) *Platform {
	t.Helper()
	if why := Missing(); why != "" {
		t.Skip("no platform to test against: " + why)
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shared.platform, shared.err = Start(ctx)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.platform
}

// StopShared stops the platform Shared started, if it did.
func StopShared() {
	if shared.platform != nil {
		shared.platform.Stop()
	}
}
