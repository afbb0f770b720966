package earshot

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	mathrand "math/rand"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Dialect is the SQL placeholder style of the outbox's database.
type Dialect int

const (
	// Postgres numbers placeholders $1, $2… (lib/pq, pgx's stdlib driver).
	Postgres Dialect = iota
	// SQLite uses ? placeholders (mattn/go-sqlite3, modernc.org/sqlite); it needs SQLite ≥ 3.24.
	SQLite
)

// The states of a receipt callback in the outbox.
const (
	// CallbackPending: waiting for its due time (a retry, or a receiver that died holding it).
	CallbackPending = "pending"
	// CallbackSending: claimed by a receiver, held until its push's answer went out, or being sent.
	CallbackSending = "sending"
	// CallbackConfirmed: the platform answered 2000.
	CallbackConfirmed = "confirmed"
	// CallbackFailed: refused for good (4040, 4012, 4030…): no retry can turn it into 2000.
	CallbackFailed = "failed"
	// CallbackSkipped: a recording.deleted push, whose acknowledgement alone confirms it.
	CallbackSkipped = "skipped"
)

const (
	noncesTable    = "earshot_go_push_nonces"
	callbacksTable = "earshot_go_receipt_callbacks"
	pruneInterval  = 10 * time.Minute
	// A claim's lease outlives its attempt by this much before another receiver may take it.
	leaseMargin = 5 * time.Second
)

var defaultRetrySchedule = []time.Duration{
	500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
	8 * time.Second, 16 * time.Second, 32 * time.Second, 60 * time.Second,
}

// OutboxConfig configures the durable outbox of receipt callbacks and push nonces.
type OutboxConfig struct {
	// DB is any database/sql database of the dialect; receivers may share it. The outbox creates its
	// tables (earshot_go_push_nonces, earshot_go_receipt_callbacks) when missing.
	DB      *sql.DB
	Dialect Dialect
	// Confirm sends one receipt callback, e.g. client.ConfirmReceipt.
	Confirm func(ctx context.Context, audioID string) error
	// RetrySchedule: delays after the 1st, 2nd… failed attempt, ±10%; the last repeats for ever.
	// Default 0.5 s doubling to 60 s.
	RetrySchedule []time.Duration
	// AttemptTimeout abandons (and retries) one attempt; default 30 s.
	AttemptTimeout time.Duration
	// AnswerGrace: a callback whose answer was never reported written (a ResponseWriter without
	// http.Flusher, a crash) is sent this long after its push was recorded; default 10 s.
	AnswerGrace time.Duration
	// PollInterval: how often due callbacks are looked for; default 5 s.
	PollInterval time.Duration
	// Concurrency: callbacks sent at once; default 16.
	Concurrency int
	// ReplayWindow: how long an accepted push nonce is refused again; default 7 days.
	ReplayWindow time.Duration
	// Logf reports failures and retries; log.Printf when nil.
	Logf func(format string, args ...interface{})
}

// Outbox keeps, durably in the database, the nonces of the pushes accepted and the receipt callback
// of each push stored, and sends the callbacks after their answers, retrying with backoff across
// restarts. A callback left by a receiver that stopped or died is sent by any outbox on the same
// database once its claim has run out.
type Outbox struct {
	cfg      OutboxConfig
	db       *sql.DB
	claimant string
	slots    chan struct{}
	poke     chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	loopDone chan struct{}
	wg       sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	held    map[string]heldCallback // recorded here, waiting for their answer
	sending map[string]bool         // being sent from here; true: woken again meanwhile
}

// callbackJob is a callback claimed by this outbox.
type callbackJob struct {
	eventID, audioID string
	claimNo, rearms  int
	failures         int
}

type heldCallback struct {
	job callbackJob
	at  time.Time
}

// Callback is a receipt callback as the outbox stores it.
type Callback struct {
	EventID   string
	AudioID   string
	EventType string
	State     string
	Attempts  int
	LastError string
	// DueAt: when a pending callback is next attempted, or a sending one's claim ends.
	DueAt      *time.Time
	ReceivedAt time.Time
	DoneAt     *time.Time
}

// OpenOutbox creates the outbox's tables when missing and starts sending the callbacks due.
func OpenOutbox(ctx context.Context, cfg OutboxConfig) (*Outbox, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	o := &Outbox{
		cfg:      cfg,
		db:       cfg.DB,
		claimant: randomClaimant(),
		slots:    make(chan struct{}, cfg.Concurrency),
		poke:     make(chan struct{}, 1),
		loopDone: make(chan struct{}),
		held:     map[string]heldCallback{},
		sending:  map[string]bool{},
	}
	if err := o.createSchema(ctx); err != nil {
		return nil, err
	}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	go o.loop()
	return o, nil
}

func (cfg *OutboxConfig) withDefaults() error {
	if cfg.DB == nil || cfg.Confirm == nil {
		return errors.New("earshot: OutboxConfig needs DB and Confirm")
	}
	if cfg.Dialect != Postgres && cfg.Dialect != SQLite {
		return errors.New("earshot: OutboxConfig.Dialect must be Postgres or SQLite")
	}
	if len(cfg.RetrySchedule) == 0 {
		cfg.RetrySchedule = defaultRetrySchedule
	}
	setDefault := func(d *time.Duration, value time.Duration) {
		if *d <= 0 {
			*d = value
		}
	}
	setDefault(&cfg.AttemptTimeout, 30*time.Second)
	setDefault(&cfg.AnswerGrace, 10*time.Second)
	setDefault(&cfg.PollInterval, 5*time.Second)
	setDefault(&cfg.ReplayWindow, 7*24*time.Hour)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	return nil
}

func randomClaimant() string {
	b := make([]byte, 9)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Times are stored as epoch milliseconds (BIGINT), the same in every dialect.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS ` + noncesTable + ` (
		key_version INTEGER NOT NULL,
		nonce VARCHAR(64) NOT NULL,
		expires_at BIGINT NOT NULL,
		PRIMARY KEY (key_version, nonce))`,
	// One row per eventId ever stored (the record that dedups repeated pushes), with its callback.
	// due_at: when a pending callback is due, or a sending one's claim ends (NULL once done).
	// claim_no fences each claim's result; rearms counts the pushes repeated since.
	`CREATE TABLE IF NOT EXISTS ` + callbacksTable + ` (
		event_id VARCHAR(255) NOT NULL PRIMARY KEY,
		audio_id TEXT NOT NULL,
		event_type TEXT NOT NULL,
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
	return nil
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
// went out; a deletion needs none. False when the eventId was already recorded.
func (o *Outbox) record(ctx context.Context, event *PushEvent) (bool, error) {
	now := time.Now()
	state, dueAt, claimedBy, claimNo := CallbackSending, interface{}(millis(now.Add(o.cfg.AnswerGrace))), interface{}(o.claimant), 1
	if event.Deleted() {
		state, dueAt, claimedBy, claimNo = CallbackSkipped, nil, nil, 0
	}
	created, err := o.exec(ctx, `INSERT INTO `+callbacksTable+`
		(event_id, audio_id, event_type, received_at, state, due_at, claimed_by, claim_no)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
		event.EventID, event.AudioID, event.EventType, millis(now), state, dueAt, claimedBy, claimNo)
	if err != nil || created == 0 {
		return false, err
	}
	if !event.Deleted() {
		o.mu.Lock()
		o.held[event.EventID] = heldCallback{job: callbackJob{eventID: event.EventID, audioID: event.AudioID, claimNo: 1}, at: now}
		o.mu.Unlock()
	}
	return true, nil
}

// wake is called once the answer to a push of eventID was written: its callback may go now.
func (o *Outbox) wake(eventID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	held, isHeld := o.held[eventID]
	delete(o.held, eventID)
	if _, busy := o.sending[eventID]; busy {
		o.sending[eventID] = true
		return
	}
	o.wg.Add(1)
	if isHeld && time.Since(held.at) < o.cfg.AnswerGrace {
		o.sending[eventID] = false
		go o.run(held.job, true)
		return
	}
	go func() {
		defer o.wg.Done()
		o.claimPending(eventID)
	}()
}

// run sends a claimed callback once a slot is free. The caller counted it in o.wg.
func (o *Outbox) run(job callbackJob, renew bool) {
	defer o.wg.Done()
	select {
	case o.slots <- struct{}{}:
	case <-o.ctx.Done():
		o.finished(job.eventID)
		return
	}
	defer func() { <-o.slots }()
	o.send(job, renew)
}

// send makes one attempt and records its result under the claim.
func (o *Outbox) send(job callbackJob, renew bool) {
	if renew && !o.renew(job) {
		o.finished(job.eventID)
		return
	}
	ctx, cancel := context.WithTimeout(o.ctx, o.cfg.AttemptTimeout)
	err := callWithin(ctx, o.cfg.Confirm, job.audioID)
	cancel()
	o.settle(job, err)
	if o.finished(job.eventID) {
		o.claimPending(job.eventID)
	}
}

// renew extends a held claim's lease over the attempt it starts; false when the claim was lost.
func (o *Outbox) renew(job callbackJob) bool {
	ctx, cancel := context.WithTimeout(context.Background(), o.cfg.AttemptTimeout)
	defer cancel()
	n, err := o.exec(ctx, `UPDATE `+callbacksTable+` SET due_at = ? WHERE event_id = ? AND claim_no = ? AND state = 'sending'`,
		millis(time.Now().Add(o.lease())), job.eventID, job.claimNo)
	if err != nil {
		o.cfg.Logf("earshot: receipt callback of %s: %v (it goes out when its claim ends)", job.audioID, err)
	}
	return err == nil && n == 1
}

// lease is how long a claim lasts: its attempt, and a margin for recording its result (and for
// clocks that differ: a claim taken over too early only makes a callback twice, which is harmless).
func (o *Outbox) lease() time.Duration {
	margin := leaseMargin
	if o.cfg.AttemptTimeout < margin {
		margin = o.cfg.AttemptTimeout
	}
	return o.cfg.AttemptTimeout + margin
}

// finished forgets a callback sent from here; true when its push was answered again meanwhile.
func (o *Outbox) finished(eventID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	again := o.sending[eventID]
	delete(o.sending, eventID)
	return again && !o.closed
}

// callWithin returns when confirm does or ctx ends, whichever comes first.
func callWithin(ctx context.Context, confirm func(context.Context, string) error, audioID string) error {
	done := make(chan error, 1)
	go func() { done <- confirm(ctx, audioID) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer within the attempt's time: %w", ctx.Err())
	}
}

// settle records an attempt's result under its claim: confirmed, failed for good, or due again.
// A push repeated during the attempt leaves the callback pending: it goes out again.
func (o *Outbox) settle(job callbackJob, sendErr error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.cfg.AttemptTimeout)
	defer cancel()
	now := time.Now()
	state, dueAt, failures, lastError := CallbackConfirmed, interface{}(nil), 0, interface{}(nil)
	doneAt := interface{}(millis(now))
	switch {
	case sendErr == nil:
	case permanentRefusal(sendErr):
		state, failures, lastError = CallbackFailed, job.failures+1, sendErr.Error()
		o.cfg.Logf("earshot: receipt callback of %s refused for good: %v", job.audioID, sendErr)
	default:
		delay := o.retryDelay(job.failures)
		state, dueAt, failures, lastError, doneAt = CallbackPending, millis(now.Add(delay)), job.failures+1, sendErr.Error(), nil
		o.cfg.Logf("earshot: receipt callback of %s failed, retrying in %v: %v", job.audioID, delay.Round(time.Millisecond), sendErr)
	}
	n, err := o.exec(ctx, `UPDATE `+callbacksTable+` SET state = ?, due_at = ?, claimed_by = NULL, failures = ?,
		attempts = attempts + 1, last_error = ?, done_at = ? WHERE event_id = ? AND claim_no = ? AND rearms = ?`,
		state, dueAt, failures, lastError, doneAt, job.eventID, job.claimNo, job.rearms)
	if err == nil && n == 0 {
		_, err = o.exec(ctx, `UPDATE `+callbacksTable+` SET state = 'pending', due_at = ?, claimed_by = NULL,
			failures = 0, attempts = attempts + 1, last_error = ? WHERE event_id = ? AND claim_no = ?`,
			millis(now.Add(o.cfg.AnswerGrace)), lastError, job.eventID, job.claimNo)
	}
	if err != nil {
		o.cfg.Logf("earshot: recording the receipt callback of %s: %v (it goes out again when its claim ends)", job.audioID, err)
	}
}

// permanentRefusal: a refusal no later attempt can turn into 2000 (unknown audioId, wrong key,
// disabled enterprise…); token refusals, replays and rate limits are not.
func permanentRefusal(err error) bool {
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Code < 4000 || apiErr.Code >= 5000 {
		return false
	}
	switch apiErr.Code {
	case CodeUnauthorized, CodeTokenExpired, CodeReplayed, CodeRateLimited, CodeRequestTimeout:
		return false
	}
	return true
}

func (o *Outbox) retryDelay(failures int) time.Duration {
	schedule := o.cfg.RetrySchedule
	if failures >= len(schedule) {
		failures = len(schedule) - 1
	}
	d := float64(schedule[failures])
	return time.Duration(d * (0.9 + 0.2*mathrand.Float64()))
}

// loop claims the callbacks due, at every poll and whenever poked, and prunes expired nonces.
func (o *Outbox) loop() {
	defer close(o.loopDone)
	poll := time.NewTicker(o.cfg.PollInterval)
	defer poll.Stop()
	lastPrune := time.Time{}
	for {
		if time.Since(lastPrune) >= pruneInterval {
			o.pruneNonces()
			lastPrune = time.Now()
		}
		o.claimDue()
		select {
		case <-o.ctx.Done():
			return
		case <-poll.C:
		case <-o.poke:
		}
	}
}

// claimDue claims as many due callbacks as there are free slots, and starts them.
func (o *Outbox) claimDue() {
	free := cap(o.slots) - len(o.slots)
	if free <= 0 {
		return
	}
	now := millis(time.Now())
	rows, err := o.db.QueryContext(o.ctx, o.sql(`SELECT event_id, audio_id, claim_no, rearms, failures FROM `+callbacksTable+`
		WHERE state IN ('pending', 'sending') AND due_at <= ? ORDER BY due_at LIMIT `+strconv.Itoa(free)), now)
	if err != nil {
		o.logUnlessClosing("looking for due receipt callbacks", err)
		return
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		o.logUnlessClosing("looking for due receipt callbacks", err)
		return
	}
	for _, job := range jobs {
		o.claim(job, `state IN ('pending', 'sending') AND due_at <= ?`, now)
	}
}

// claimPending claims eventID's callback if it is pending, due or not: its push was just answered.
func (o *Outbox) claimPending(eventID string) {
	rows, err := o.db.QueryContext(o.ctx, o.sql(`SELECT event_id, audio_id, claim_no, rearms, failures FROM `+callbacksTable+`
		WHERE event_id = ? AND state = 'pending'`), eventID)
	if err != nil {
		o.logUnlessClosing("claiming a receipt callback", err)
		return
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		o.logUnlessClosing("claiming a receipt callback", err)
		return
	}
	for _, job := range jobs {
		o.claim(job, `state = 'pending'`)
	}
}

// claim takes a callback as read, unless it changed since, and starts sending it.
func (o *Outbox) claim(job callbackJob, condition string, args ...interface{}) {
	o.mu.Lock()
	if _, busy := o.sending[job.eventID]; busy || o.closed {
		o.mu.Unlock()
		return
	}
	o.sending[job.eventID] = false
	o.wg.Add(1)
	o.mu.Unlock()
	params := append([]interface{}{o.claimant, millis(time.Now().Add(o.lease())), job.eventID, job.claimNo, job.rearms}, args...)
	n, err := o.exec(o.ctx, `UPDATE `+callbacksTable+` SET state = 'sending', claimed_by = ?, claim_no = claim_no + 1,
		due_at = ? WHERE event_id = ? AND claim_no = ? AND rearms = ? AND `+condition, params...)
	if err != nil || n != 1 {
		if err != nil {
			o.logUnlessClosing("claiming a receipt callback", err)
		}
		o.finished(job.eventID)
		o.wg.Done()
		return
	}
	job.claimNo++
	go o.run(job, false)
}

func scanJobs(rows *sql.Rows) ([]callbackJob, error) {
	defer rows.Close()
	var jobs []callbackJob
	for rows.Next() {
		var job callbackJob
		if err := rows.Scan(&job.eventID, &job.audioID, &job.claimNo, &job.rearms, &job.failures); err != nil {
			return nil, err
		}
		jobs = append(jobs, job)
	}
	return jobs, rows.Err()
}

func (o *Outbox) pruneNonces() {
	_, err := o.exec(o.ctx, `DELETE FROM `+noncesTable+` WHERE expires_at <= ?`, millis(time.Now()))
	o.logUnlessClosing("forgetting expired nonces", err)
}

func (o *Outbox) logUnlessClosing(what string, err error) {
	if err != nil && o.ctx.Err() == nil {
		o.cfg.Logf("earshot: %s: %v", what, err)
	}
}

// Callbacks lists the callbacks stored, oldest first; only those of audioID when it is not "".
func (o *Outbox) Callbacks(ctx context.Context, audioID string) ([]Callback, error) {
	rows, err := o.db.QueryContext(ctx, o.sql(`SELECT event_id, audio_id, event_type, state, attempts, last_error,
		due_at, received_at, done_at FROM `+callbacksTable+` WHERE ? = '' OR audio_id = ?
		ORDER BY received_at, event_id`), audioID, audioID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []Callback
	for rows.Next() {
		var c Callback
		var lastError sql.NullString
		var due, received, done sql.NullInt64
		if err := rows.Scan(&c.EventID, &c.AudioID, &c.EventType, &c.State, &c.Attempts, &lastError,
			&due, &received, &done); err != nil {
			return nil, err
		}
		c.LastError, c.ReceivedAt = lastError.String, time.UnixMilli(received.Int64)
		c.DueAt, c.DoneAt = optionalTime(due), optionalTime(done)
		list = append(list, c)
	}
	return list, rows.Err()
}

func optionalTime(ms sql.NullInt64) *time.Time {
	if !ms.Valid {
		return nil
	}
	t := time.UnixMilli(ms.Int64)
	return &t
}

// Close stops sending: callbacks in flight get until ctx ends to finish, then are abandoned; the
// callbacks this outbox holds are handed back, pending, for any outbox on the database. The
// database is not closed.
func (o *Outbox) Close(ctx context.Context) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	o.mu.Unlock()
	finished := make(chan struct{})
	go func() { o.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
	}
	o.cancel()
	<-o.loopDone
	<-finished
	handBack, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := o.exec(handBack, `UPDATE `+callbacksTable+` SET state = 'pending', claimed_by = NULL
		WHERE state = 'sending' AND claimed_by = ?`, o.claimant)
	return err
}
