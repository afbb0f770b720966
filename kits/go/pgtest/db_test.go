package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
	"github.com/earshot/earshot/kits/go/platformtests/platformtest"
	_ "github.com/lib/pq"
)

// The run's own database, created from DATABASE_URL's server and dropped at the end.
var testDatabase struct {
	url   string // "" when DATABASE_URL is unset
	err   error
	admin *sql.DB
	name  string
}

func TestMain(m *testing.M) {
	if base := os.Getenv("DATABASE_URL"); base != "" {
		testDatabase.err = createDatabase(base)
	}
	code := m.Run()
	platformtest.StopShared()
	if testDatabase.admin != nil {
		_, _ = testDatabase.admin.Exec(`DROP DATABASE IF EXISTS ` + testDatabase.name + ` WITH (FORCE)`)
		testDatabase.admin.Close()
	}
	os.Exit(code)
}

func createDatabase(base string) error {
	base = withoutSSL(base)
	admin, err := sql.Open("postgres", base)
	if err != nil {
		return err
	}
	testDatabase.admin = admin
	testDatabase.name = fmt.Sprintf("earshot_go_test_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if _, err := admin.Exec(`CREATE DATABASE ` + testDatabase.name); err != nil {
		return fmt.Errorf("creating the test database on DATABASE_URL's server: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	u.Path = "/" + testDatabase.name
	testDatabase.url = u.String()
	return nil
}

// withoutSSL: lib/pq asks for TLS unless told otherwise, and the test server is on loopback.
func withoutSSL(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Query().Get("sslmode") != "" {
		return base
	}
	query := u.Query()
	query.Set("sslmode", "disable")
	u.RawQuery = query.Encode()
	return u.String()
}

// testDB is a schema of its own in the run's database (so that no other test's outbox takes its
// callbacks), and its URL; the test is skipped when DATABASE_URL is unset.
func testDB(t *testing.T) (*sql.DB, string) {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" {
		t.Skip("DATABASE_URL is unset: the PostgreSQL tests of the Go kit are skipped (set it, e.g. postgres://postgres@127.0.0.1:5432/postgres)")
	}
	if testDatabase.err != nil {
		t.Fatal(testDatabase.err)
	}
	schema := fmt.Sprintf("t_%d", time.Now().UnixNano())
	db, err := sql.Open("postgres", testDatabase.url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	db.Close()
	u, _ := url.Parse(testDatabase.url)
	query := u.Query()
	query.Set("search_path", schema)
	u.RawQuery = query.Encode()
	db, err = sql.Open("postgres", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, u.String()
}

func testPlatform(t *testing.T) *platformtest.Platform {
	t.Helper()
	return platformtest.Shared(t)
}

func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// fastOutbox is an outbox with timings short enough for tests.
func fastOutbox(t *testing.T, db *sql.DB, confirm, confirmErasure func(context.Context, string) error) *earshot.Outbox {
	t.Helper()
	outbox, err := earshot.OpenOutbox(testContext(t, 10*time.Second), earshot.OutboxConfig{
		DB: db, Dialect: earshot.Postgres, Confirm: confirm, ConfirmErasure: confirmErasure,
		RetrySchedule:  []time.Duration{50 * time.Millisecond},
		AttemptTimeout: 2 * time.Second,
		AnswerGrace:    300 * time.Millisecond,
		PollInterval:   100 * time.Millisecond,
		Logf:           t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = outbox.Close(ctx)
	})
	return outbox
}

// newEnterprise is a new enterprise of the shared test platform, and a client with its credentials.
func newEnterprise(ctx context.Context, t *testing.T, p *platformtest.Platform) (platformtest.Credentials, *earshot.Client) {
	t.Helper()
	creds, err := p.CreateEnterprise(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return creds, newClient(t, p, creds)
}

// serveReceiver serves the kit's receiver, over a fast outbox on db, on loopback; it returns its push URL
// and its outbox.
func serveReceiver(t *testing.T, db *sql.DB, creds platformtest.Credentials, client *earshot.Client,
	store func(context.Context, *earshot.PushEvent) error) (string, *earshot.Outbox) {
	t.Helper()
	outbox := fastOutbox(t, db, client.ConfirmReceipt, client.ConfirmErasure)
	receiver, err := earshot.NewReceiver(earshot.ReceiverConfig{
		Secrets: map[int]string{creds.KeyVersion: creds.Secret},
		Outbox:  outbox,
		Store:   store,
		Logf:    t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(earshot.DefaultPushPath, receiver)
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	return server.URL + earshot.DefaultPushPath, outbox
}

// kitEnv is the environment of a receiver process: its database and the enterprise's credentials.
func kitEnv(dbURL string, p *platformtest.Platform, creds platformtest.Credentials) []string {
	return append(os.Environ(), "DATABASE_URL="+dbURL, "EARSHOT_BASE_URL="+p.PartnerURL,
		"EARSHOT_ENTERPRISE_ID="+strconv.FormatInt(creds.EnterpriseID, 10),
		"EARSHOT_KEY_VERSION="+strconv.Itoa(creds.KeyVersion), "EARSHOT_SECRET="+creds.Secret)
}

// buildBinary builds the package (a path below this module) into the test's temporary directory.
func buildBinary(ctx context.Context, t *testing.T, pkg string) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", binary, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return binary
}
