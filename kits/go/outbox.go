package earshot

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"log"
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
	// CallbackSkipped: the receiver check's recording.deleted push (and any deletion recorded before
	// erasure confirmations), whose acknowledgement alone confirms it.
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
	// ConfirmErasure sends one erasure confirmation (the callback with erased: true) once a
	// recording.deleted push was stored, that is its recording removed; e.g. client.ConfirmErasure.
	ConfirmErasure func(ctx context.Context, audioID string) error
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
	erased           bool // an erasure confirmation
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
	// Erased: an erasure confirmation, the callback of a recording.deleted push.
	Erased    bool
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
	if cfg.DB == nil || cfg.Confirm == nil || cfg.ConfirmErasure == nil {
		return errors.New("earshot: OutboxConfig needs DB, Confirm and ConfirmErasure")
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

// Callbacks lists the callbacks stored, oldest first; only those of audioID when it is not "".
func (o *Outbox) Callbacks(ctx context.Context, audioID string) ([]Callback, error) {
	rows, err := o.db.QueryContext(ctx, o.sql(`SELECT event_id, audio_id, event_type, erased, state, attempts, last_error,
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
		var erased int
		if err := rows.Scan(&c.EventID, &c.AudioID, &c.EventType, &erased, &c.State, &c.Attempts, &lastError,
			&due, &received, &done); err != nil {
			return nil, err
		}
		c.Erased = erased != 0
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
