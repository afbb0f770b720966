package earshot

import (
	"context"
	"testing"
	"time"
)

// This module's tests need nothing but the standard library and the repository's test data: those
// against a running platform are in the module platformtests, those on PostgreSQL in pgtest.

// testContext is bounded well under the suite's -timeout, so that a hang fails the one test.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
