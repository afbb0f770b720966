package earshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultPushPath is where the platform pushes unless told otherwise.
const DefaultPushPath = "/earshot/push"

// The receiver check marks its pushes with this header and value, and their audioIds with this prefix.
const (
	checkHeader        = "X-Earshot-Check"
	checkHeaderValue   = "1"
	checkAudioIDPrefix = "check_"
)

const defaultBodyLimit = 1 << 20

// ReceiverConfig configures a push Receiver.
type ReceiverConfig struct {
	// Secrets by keyVersion: the current one, and the previous one during a key rotation.
	Secrets map[int]string
	// Outbox records the pushes' nonces and receipts, and sends the receipt callbacks.
	Outbox *Outbox
	// Store stores a pushed event durably before it is acknowledged: an upsert keyed by audioId
	// (compare OccurredAt), or, for recording.deleted, the removal of your copy, its audio and any other
	// copy included: the deletion's callback then confirms the erasure (erased: true). The push is answered
	// 2000 only once it returned nil; an error is answered 5000 and the platform pushes again. It is
	// called once per eventId, except when the process stops between it and the outbox's record, or
	// receivers sharing the database get one event at once: store idempotently. A push of the operator's
	// receiver check (header X-Earshot-Check: 1 and an audioId starting "check_") never reaches it.
	Store func(ctx context.Context, event *PushEvent) error
	// BodyLimit: larger bodies are refused with 4130; default 1 MiB.
	BodyLimit int64
	// Logf reports refusals and failures; log.Printf when nil.
	Logf func(format string, args ...interface{})
}

// Receiver is the http.Handler of your push URL. For each push it reads the raw body, opens the
// envelope (secret by keyVersion), refuses a nonce already accepted (4090), checks the event, hands
// a new eventId to Store, records its receipt callback in the outbox, answers {"code":2000}, and only
// once that answer is written and flushed lets the outbox call back. An eventId stored before is
// answered 2000 again without calling Store, and its callback is sent again after the answer.
type Receiver struct {
	keys      map[int]*Key
	outbox    *Outbox
	store     func(ctx context.Context, event *PushEvent) error
	bodyLimit int64
	logf      func(format string, args ...interface{})

	mu     sync.Mutex
	nonces map[string]bool          // being handled: the same envelope twice at once is a replay
	events map[string]chan struct{} // eventIds being stored; closed when done
}

// NewReceiver checks the configuration and returns the handler.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	if cfg.Outbox == nil || cfg.Store == nil {
		return nil, errors.New("earshot: ReceiverConfig needs Outbox and Store")
	}
	if len(cfg.Secrets) == 0 {
		return nil, errors.New("earshot: ReceiverConfig needs at least one secret")
	}
	r := &Receiver{
		keys: map[int]*Key{}, outbox: cfg.Outbox, store: cfg.Store, bodyLimit: cfg.BodyLimit, logf: cfg.Logf,
		nonces: map[string]bool{}, events: map[string]chan struct{}{},
	}
	for version, secret := range cfg.Secrets {
		if version < 1 || version > MaxKeyVersion {
			return nil, fmt.Errorf("earshot: keyVersion %d is not from 1 to 2^31-1", version)
		}
		key, err := LoadKey(secret)
		if err != nil {
			return nil, fmt.Errorf("earshot: the secret of keyVersion %d: %w", version, err)
		}
		r.keys[version] = key
	}
	if r.bodyLimit <= 0 {
		r.bodyLimit = defaultBodyLimit
	}
	if r.logf == nil {
		r.logf = log.Printf
	}
	return r, nil
}

// pushAnswer is the answer to one push; eventID is set when the outbox may call back after it.
type pushAnswer struct {
	code    int
	msg     string
	eventID string
}

func refuse(code int, msg string) pushAnswer { return pushAnswer{code: code, msg: msg} }

// ServeHTTP handles one push.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		r.write(w, refuse(CodeInvalidRequest, "use POST"), false)
		return
	}
	if mediaType, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		r.write(w, refuse(CodeUnsupportedMediaType, "Content-Type must be application/json"), false)
		return
	}
	tooLarge := refuse(CodePayloadTooLarge, fmt.Sprintf("the body is over %d bytes", r.bodyLimit))
	if req.ContentLength > r.bodyLimit {
		r.write(w, tooLarge, true)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, r.bodyLimit+1))
	if err != nil {
		return // the platform went away: it pushes again
	}
	if int64(len(body)) > r.bodyLimit {
		r.write(w, tooLarge, true)
		return
	}
	answer := r.receive(req, body)
	if answer.code != CodeOK && answer.code != CodeInternalError {
		r.logf("earshot: push refused with %d: %s", answer.code, answer.msg)
	}
	r.write(w, answer, false)
	if answer.eventID == "" {
		return
	}
	if flusher, ok := w.(http.Flusher); ok {
		flusher.Flush()
		r.outbox.wake(answer.eventID)
	}
	// Without a Flusher the answer is only known written once the handler returned: the callback
	// then goes when its hold (AnswerGrace) ends.
}

func (r *Receiver) write(w http.ResponseWriter, answer pushAnswer, closeConnection bool) {
	body, _ := json.Marshal(map[string]interface{}{"code": answer.code, "msg": answer.msg})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if closeConnection {
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(answer.code / 10)
	_, _ = w.Write(body)
}

// receive opens, checks, dedups and stores one push.
func (r *Receiver) receive(req *http.Request, body []byte) pushAnswer {
	ctx := req.Context()
	env, plaintext, err := OpenEnvelope(body, func(version int) *Key { return r.keys[version] })
	if err != nil {
		return refuse(envelopeCode(err), err.Error())
	}
	event, err := parsePushEvent(plaintext, env.EventID)
	if err != nil {
		return refuse(CodeInvalidParameter, err.Error())
	}
	check := isCheckPush(req, event)
	nonce := strconv.Itoa(env.KeyVersion) + ":" + env.Nonce
	r.mu.Lock()
	if r.nonces[nonce] {
		r.mu.Unlock()
		return refuse(CodeReplayed, "this envelope nonce was already used")
	}
	r.nonces[nonce] = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.nonces, nonce)
		r.mu.Unlock()
	}()
	taken, err := r.outbox.takeNonce(ctx, env.KeyVersion, env.Nonce)
	if err != nil {
		return r.databaseFailure(event, err)
	}
	if !taken {
		return refuse(CodeReplayed, "this envelope nonce was already used")
	}
	return r.storeOnce(ctx, event, check)
}

// storeOnce stores a new event, once however often it arrives at the same time: a push of an
// eventId being stored waits for it, then finds it stored (or stores it, when the first failed). A push
// of the receiver check is recorded and called back, as the check expects, but never handed to Store.
func (r *Receiver) storeOnce(ctx context.Context, event *PushEvent, check bool) pushAnswer {
	mine := make(chan struct{})
	for {
		r.mu.Lock()
		earlier := r.events[event.EventID]
		if earlier == nil {
			r.events[event.EventID] = mine
			r.mu.Unlock()
			break
		}
		r.mu.Unlock()
		select {
		case <-earlier:
		case <-ctx.Done():
			return refuse(CodeInternalError, "the push was abandoned")
		}
	}
	defer func() {
		r.mu.Lock()
		delete(r.events, event.EventID)
		r.mu.Unlock()
		close(mine)
	}()
	known, err := r.outbox.known(ctx, event.EventID)
	if err != nil {
		return r.databaseFailure(event, err)
	}
	if known {
		return pushAnswer{code: CodeOK, msg: "success (already received)", eventID: event.EventID}
	}
	if !check {
		if err := r.store(ctx, event); err != nil {
			r.logf("earshot: Store failed for push %s (%s); answering 5000 so that the platform pushes again: %v",
				event.EventID, event.AudioID, err)
			return refuse(CodeInternalError, "the recording could not be stored; push again later")
		}
	}
	// Stored: recorded even when the platform gave up waiting, so that its next push is a duplicate.
	recordCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.outbox.record(recordCtx, event, check); err != nil {
		return r.databaseFailure(event, err)
	}
	return pushAnswer{code: CodeOK, msg: "success", eventID: event.EventID}
}

func (r *Receiver) databaseFailure(event *PushEvent, err error) pushAnswer {
	r.logf("earshot: push %s: the outbox database: %v", event.EventID, err)
	return refuse(CodeInternalError, "the push could not be recorded; push again later")
}

// isCheckPush tells a push of the operator's receiver check (`earshot endpoints check`). It is asked
// only of a push that opened with the enterprise's key, and takes both the header and the audioId's
// prefix (which no recording may have): a forged header cannot make the receiver skip a recording.
func isCheckPush(req *http.Request, event *PushEvent) bool {
	return req.Header.Get(checkHeader) == checkHeaderValue && strings.HasPrefix(event.AudioID, checkAudioIDPrefix)
}
