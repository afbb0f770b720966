package earshot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Times are stored as epoch milliseconds (BIGINT), the same in every dialect.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS ` + noncesTable + ` (
		key_version INTEGER NOT NULL,
		nonce VARCHAR(64) NOT NULL,
		expires_at BIGINT NOT NULL,
		PRIMARY KEY (key_version, nonce))`,
	// One row per eventId ever stored (the record that dedups repeated pushes), with its callback.
	// due_at: when a pending callback is due, or a sending one's claim ends (NULL once done).
	// claim_no fences each claim's result; rearms counts the pushes repeated since. erased: 1 for an
	// erasure confirmation (a deletion's callback).
	`CREATE TABLE IF NOT EXISTS ` + callbacksTable + ` (
		event_id VARCHAR(255) NOT NULL PRIMARY KEY,
		audio_id TEXT NOT NULL,
		event_type TEXT NOT NULL,
		erased INTEGER NOT NULL DEFAULT 0,
		received_at BIGINT NOT NULL,
		state VARCHAR(16) NOT NULL,
		due_at BIGINT,
		claimed_by VARCHAR(64),
		claim_no INTEGER NOT NULL DEFAULT 0,
		rearms INTEGER NOT NULL DEFAULT 0,
		failures INTEGER NOT NULL DEFAULT 0,
		attempts INTEGER NOT NULL DEFAULT 0,
		last_error TEXT,
		done_at BIGINT)`,
	`CREATE INDEX IF NOT EXISTS ` + callbacksTable + `_due ON ` + callbacksTable + ` (due_at)`,
	`CREATE INDEX IF NOT EXISTS ` + noncesTable + `_expiry ON ` + noncesTable + ` (expires_at)`,
}

// createSchema tolerates receivers creating the tables at the same time (PostgreSQL may then
// refuse one CREATE ... IF NOT EXISTS): it tries again.
func (o *Outbox) createSchema(ctx context.Context) error {
	var err error
	for try := 0; try < 5; try++ {
		if err = o.createTables(ctx); err == nil {
			return nil
		}
		if err := sleep(ctx, time.Duration(50*(try+1))*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("earshot: creating the outbox tables: %w", err)
}

func (o *Outbox) createTables(ctx context.Context) error {
	for _, statement := range schema {
		if _, err := o.db.ExecContext(ctx, statement); err != nil {
			return err
		}
	}
	return o.addErased(ctx)
}

// addErased gives a table made before erasure confirmations its erased column (its rows are receipts,
// and skipped deletions). Two receivers adding it at once: one fails, and createSchema tries again.
func (o *Outbox) addErased(ctx context.Context) error {
	rows, err := o.db.QueryContext(ctx, `SELECT erased FROM `+callbacksTable+` WHERE 1 = 0`)
	if err == nil {
		return rows.Close()
	}
	_, err = o.db.ExecContext(ctx, `ALTER TABLE `+callbacksTable+` ADD COLUMN erased INTEGER NOT NULL DEFAULT 0`)
	return err
}

// sql writes a statement's ? placeholders in the dialect's style.
func (o *Outbox) sql(statement string) string {
	if o.cfg.Dialect != Postgres {
		return statement
	}
	var b strings.Builder
	n := 0
	for _, r := range statement {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func (o *Outbox) exec(ctx context.Context, statement string, args ...interface{}) (int64, error) {
	result, err := o.db.ExecContext(ctx, o.sql(statement), args...)
	if err != nil {
		return 0, err
	}
	return result.RowsAffected()
}

func millis(t time.Time) int64 { return t.UnixMilli() }

// takeNonce takes a push's nonce: false when it was accepted before, within the replay window.
func (o *Outbox) takeNonce(ctx context.Context, keyVersion int, nonce string) (bool, error) {
	now := time.Now()
	taken, err := o.exec(ctx, `INSERT INTO `+noncesTable+` (key_version, nonce, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (key_version, nonce) DO UPDATE SET expires_at = excluded.expires_at
		WHERE `+noncesTable+`.expires_at <= ?`,
		keyVersion, nonce, millis(now.Add(o.cfg.ReplayWindow)), millis(now))
	return taken == 1, err
}

// known tells whether eventID was stored before. A repeated event's callback is due again (the
// platform still waits for it), once the repeat's answer is out (wake).
func (o *Outbox) known(ctx context.Context, eventID string) (bool, error) {
	rearmed, err := o.exec(ctx, `UPDATE `+callbacksTable+` SET
		state = CASE WHEN state = 'sending' THEN state ELSE 'pending' END,
		due_at = CASE WHEN state = 'sending' THEN due_at ELSE ? END,
		failures = CASE WHEN state = 'sending' THEN failures ELSE 0 END,
		done_at = NULL, rearms = rearms + 1
		WHERE event_id = ? AND state IN ('sending', 'confirmed', 'failed')`,
		millis(time.Now().Add(o.cfg.AnswerGrace)), eventID)
	if err != nil || rearmed > 0 {
		return rearmed > 0, err
	}
	var one int
	err = o.db.QueryRowContext(ctx, o.sql(`SELECT 1 FROM `+callbacksTable+` WHERE event_id = ?`), eventID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// record stores a push's receipt callback, held by this outbox until wake(eventID) says its answer
// went out. A deletion's, recorded once Store removed the recording, confirms its erasure; the receiver
// check's deletion removed nothing and needs none. False when the eventId was already recorded.
func (o *Outbox) record(ctx context.Context, event *PushEvent, check bool) (bool, error) {
	now := time.Now()
	state, dueAt, claimedBy, claimNo := CallbackSending, interface{}(millis(now.Add(o.cfg.AnswerGrace))), interface{}(o.claimant), 1
	skipped, erased := event.Deleted() && check, 0
	if skipped {
		state, dueAt, claimedBy, claimNo = CallbackSkipped, nil, nil, 0
	} else if event.Deleted() {
		erased = 1
	}
	created, err := o.exec(ctx, `INSERT INTO `+callbacksTable+`
		(event_id, audio_id, event_type, erased, received_at, state, due_at, claimed_by, claim_no)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
		event.EventID, event.AudioID, event.EventType, erased, millis(now), state, dueAt, claimedBy, claimNo)
	if err != nil || created == 0 {
		return false, err
	}
	if !skipped {
		job := callbackJob{eventID: event.EventID, audioID: event.AudioID, claimNo: 1, erased: erased == 1}
		o.mu.Lock()
		o.held[event.EventID] = heldCallback{job: job, at: now}
		o.mu.Unlock()
	}
	return true, nil
}
