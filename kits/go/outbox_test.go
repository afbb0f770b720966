package earshot

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestOutboxWritesPlaceholdersInItsDialect(t *testing.T) {
	statement := `UPDATE t SET a = ? WHERE b = ? AND c IN (?, 'x')`
	postgres := (&Outbox{cfg: OutboxConfig{Dialect: Postgres}}).sql(statement)
	if postgres != `UPDATE t SET a = $1 WHERE b = $2 AND c IN ($3, 'x')` {
		t.Errorf("PostgreSQL: %s", postgres)
	}
	if sqlite := (&Outbox{cfg: OutboxConfig{Dialect: SQLite}}).sql(statement); sqlite != statement {
		t.Errorf("SQLite: %s", sqlite)
	}
}

func TestOutboxRetriesAllButPermanentRefusals(t *testing.T) {
	for _, c := range []struct {
		err       error
		permanent bool
	}{
		{&Error{Code: CodeNotFound}, true},
		{&Error{Code: CodeDecryptionFailed}, true},
		{&Error{Code: CodeForbidden}, true},
		{&Error{Code: CodeTokenExpired}, false},
		{&Error{Code: CodeRateLimited}, false},
		{&Error{Code: CodeInternalError}, false},
		{&NetworkError{URL: "x", Err: context.DeadlineExceeded}, false},
		{errors.New("anything else"), false},
	} {
		if got := permanentRefusal(c.err); got != c.permanent {
			t.Errorf("%v: permanent %v, want %v", c.err, got, c.permanent)
		}
	}
}

func TestOutboxRetryDelayFollowsTheScheduleWithJitter(t *testing.T) {
	o := &Outbox{cfg: OutboxConfig{RetrySchedule: []time.Duration{time.Second, 10 * time.Second}}}
	for failures, want := range []time.Duration{time.Second, 10 * time.Second, 10 * time.Second} {
		if d := o.retryDelay(failures); d < want*9/10 || d > want*11/10 {
			t.Errorf("after %d failures: %v, want %v ±10%%", failures+1, d, want)
		}
	}
}

func TestOutboxConfigIsChecked(t *testing.T) {
	if _, err := OpenOutbox(context.Background(), OutboxConfig{}); err == nil {
		t.Fatal("an outbox without a database or callback")
	}
	confirm := func(context.Context, string) error { return nil }
	withoutErasure := OutboxConfig{DB: &sql.DB{}, Dialect: Postgres, Confirm: confirm}
	if _, err := OpenOutbox(context.Background(), withoutErasure); err == nil || !strings.Contains(err.Error(), "ConfirmErasure") {
		t.Fatalf("an outbox without ConfirmErasure: %v", err)
	}
}
