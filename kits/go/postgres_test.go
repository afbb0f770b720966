package earshot

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Where Debian's golang-github-lib-pq-dev puts the driver pgtest/go.mod points at.
const libPQSource = "/usr/share/gocode/src/github.com/lib/pq"

// TestPostgreSQLSuite runs the tests that need PostgreSQL: they live in the module pgtest (with the
// driver), so that this module stays stdlib-only, and `go test ./...` here does not reach them itself.
func TestPostgreSQLSuite(t *testing.T) {
	if os.Getenv("DATABASE_URL") == "" {
		t.Skip("DATABASE_URL is unset: the PostgreSQL tests (outbox, pushes from the platform, the kill test) " +
			"are skipped; set it to a server where databases may be created, e.g. postgres://postgres@127.0.0.1:5432/postgres")
	}
	if _, err := os.Stat(libPQSource); err != nil {
		t.Skip("no PostgreSQL driver at " + libPQSource + ": the PostgreSQL tests are skipped (apt-get install golang-github-lib-pq-dev)")
	}
	timeout := 3 * time.Minute
	if deadline, ok := t.Deadline(); ok {
		timeout = time.Until(deadline) - 5*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"test", "-count=1", "-timeout", timeout.Round(time.Second).String()}
	if testing.Verbose() {
		args = append(args, "-v")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./...")...)
	cmd.Dir = "pgtest"
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go test in pgtest: %v", err)
	}
}
