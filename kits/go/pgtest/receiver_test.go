package pgtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
)

const secret = "wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0="

// partner is a receiver on PostgreSQL behind a loopback server, with what it stored and called back.
type partner struct {
	t        *testing.T
	url      string
	outbox   *earshot.Outbox
	mu       sync.Mutex
	stored   []*earshot.PushEvent
	posted   map[string]string // audioIds by eventId, of the pushes posted that open with secret
	flushed  map[string]bool   // eventIds whose answer was written and flushed
	calls    chan string       // audioIds called back, "erased <audioId>" for an erasure confirmation
	failWith error             // Store's error, when set
}

// newPartner serves a Receiver; confirm (nil: record the callback) is the outbox's callback, erasure
// confirmations included.
func newPartner(t *testing.T, confirm func(context.Context, string) error) *partner {
	t.Helper()
	db, _ := testDB(t)
	p := &partner{t: t, flushed: map[string]bool{}, calls: make(chan string, 100)}
	confirmErasure := confirm
	if confirm == nil {
		confirm = p.confirm
		confirmErasure = func(ctx context.Context, audioID string) error { return p.confirm(ctx, "erased "+audioID) }
	}
	p.outbox = fastOutbox(t, db, confirm, confirmErasure)
	receiver, err := earshot.NewReceiver(earshot.ReceiverConfig{
		Secrets: map[int]string{1: secret},
		Outbox:  p.outbox,
		Store:   p.store,
		Logf:    t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		receiver.ServeHTTP(&flushRecorder{ResponseWriter: w, partner: p, eventID: r.Header.Get("X-Earshot-Event-Id")}, r)
	}))
	t.Cleanup(server.Close)
	p.url = server.URL
	return p
}

func (p *partner) store(_ context.Context, event *earshot.PushEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failWith != nil {
		return p.failWith
	}
	p.stored = append(p.stored, event)
	return nil
}

// confirm records a callback, and fails the test when no answer was flushed before it.
func (p *partner) confirm(_ context.Context, audioID string) error {
	p.mu.Lock()
	answered := false
	for eventID, posted := range p.posted {
		answered = answered || (posted == strings.TrimPrefix(audioID, "erased ") && p.flushed[eventID])
	}
	p.mu.Unlock()
	if !answered {
		p.t.Errorf("callback of %s before any answer to its push was flushed", audioID)
	}
	p.calls <- audioID
	return nil
}

// flushRecorder notes that an answer was flushed to the connection.
type flushRecorder struct {
	http.ResponseWriter
	partner *partner
	eventID string
}

func (f *flushRecorder) Flush() {
	f.ResponseWriter.(http.Flusher).Flush()
	f.partner.mu.Lock()
	f.partner.flushed[f.eventID] = true
	f.partner.mu.Unlock()
}

// waitCall waits for the callback of audioID.
func (p *partner) waitCall(ctx context.Context, audioID string) {
	p.t.Helper()
	for {
		select {
		case got := <-p.calls:
			if got == audioID {
				return
			}
			p.t.Fatalf("callback of %s, want %s", got, audioID)
		case <-ctx.Done():
			p.t.Fatalf("no callback of %s", audioID)
		}
	}
}

// noCallPending fails when a callback was made that the test did not wait for.
func (p *partner) noCallPending() {
	p.t.Helper()
	select {
	case got := <-p.calls:
		p.t.Fatalf("an unexpected callback of %s", got)
	default:
	}
}

func (p *partner) storedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.stored)
}

// pushEvent is a push's plaintext.
func pushEvent(eventID, eventType, audioID string, data map[string]interface{}) map[string]interface{} {
	return map[string]interface{}{
		"eventId": eventID, "eventType": eventType, "audioId": audioID,
		"occurredAt": "2026-11-02T01:00:03.512Z", "data": data,
	}
}

func audioData() map[string]interface{} {
	return map[string]interface{}{"deviceUid": "DEV-1", "title": "Standup", "denoiseUrl": "https://cdn.example.com/a.mp3",
		"recordDuration": 61000, "recordedAt": "2026-11-02T01:00:00Z"}
}

func seal(t *testing.T, secretText string, keyVersion int, plaintext map[string]interface{}) []byte {
	t.Helper()
	key, err := earshot.LoadKey(secretText)
	if err != nil {
		t.Fatal(err)
	}
	env, err := key.Seal(keyVersion, plaintext["eventId"].(string), plaintext)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(env)
	return body
}

// post pushes a body as the platform does and returns the HTTP status and the answer's code.
func (p *partner) post(ctx context.Context, body []byte, header map[string]string) (int, int) {
	p.t.Helper()
	var env struct {
		EventID string `json:"eventId"`
	}
	_ = json.Unmarshal(body, &env)
	p.notePosted(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Earshot-Event-Id", env.EventID)
	for name, value := range header {
		req.Header.Set(name, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	var answer struct {
		Code int `json:"code"`
	}
	if err := json.Unmarshal(text, &answer); err != nil {
		p.t.Fatalf("answer %q: %v", text, err)
	}
	return resp.StatusCode, answer.Code
}

// notePosted notes the audioId of a push that opens with secret, whether or not it gets stored.
func (p *partner) notePosted(body []byte) {
	key, err := earshot.LoadKey(secret)
	if err != nil {
		p.t.Fatal(err)
	}
	env, plaintext, err := key.Open(body)
	if err != nil {
		return
	}
	var event struct {
		AudioID string `json:"audioId"`
	}
	_ = json.Unmarshal(plaintext, &event)
	p.mu.Lock()
	if p.posted == nil {
		p.posted = map[string]string{}
	}
	p.posted[env.EventID] = event.AudioID
	p.mu.Unlock()
}

func expectAnswer(t *testing.T, what string, status, code, wantCode int) {
	t.Helper()
	if code != wantCode || status != wantCode/10 {
		t.Fatalf("%s: HTTP %d code %d, want %d", what, status, code, wantCode)
	}
}

// withField returns a copy of body with its JSON field set.
func withField(t *testing.T, body []byte, field string, value interface{}) []byte {
	t.Helper()
	var fields map[string]interface{}
	_ = json.Unmarshal(body, &fields)
	fields[field] = value
	text, _ := json.Marshal(fields)
	return text
}

// The series the operator's receiver check pushes, in its order.
func TestReceiverCheckSeries(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	p := newPartner(t, nil)
	check := map[string]string{"X-Earshot-Check": "1"}

	valid := seal(t, secret, 1, pushEvent("evt-check-1", earshot.EventAudioReady, "check_1", audioData()))
	status, code := p.post(ctx, valid, check)
	expectAnswer(t, "a valid push", status, code, earshot.CodeOK)
	p.waitCall(ctx, "check_1")

	again := seal(t, secret, 1, pushEvent("evt-check-1", earshot.EventAudioReady, "check_1", audioData()))
	status, code = p.post(ctx, again, check)
	expectAnswer(t, "the same eventId with a fresh nonce", status, code, earshot.CodeOK)
	p.waitCall(ctx, "check_1")

	tag, _ := base64.StdEncoding.DecodeString(mustField(t, valid, "tag"))
	tag[0] ^= 1
	tampered := withField(t, seal(t, secret, 1, pushEvent("evt-check-2", earshot.EventAudioReady, "check_2", audioData())),
		"tag", base64.StdEncoding.EncodeToString(tag))
	status, code = p.post(ctx, tampered, check)
	expectAnswer(t, "a tampered tag", status, code, earshot.CodeDecryptionFailed)
	otherKey := seal(t, "0123456789abcdefghijklmnopqrstuv", 1, pushEvent("evt-check-3", earshot.EventAudioReady, "check_3", audioData()))
	status, code = p.post(ctx, otherKey, check)
	expectAnswer(t, "another key", status, code, earshot.CodeDecryptionFailed)
	status, code = p.post(ctx, []byte(`{"hello":"world"}`), check)
	expectAnswer(t, "not an envelope", status, code, earshot.CodeInvalidRequest)
	status, code = p.post(ctx, []byte(`not json`), check)
	expectAnswer(t, "not JSON", status, code, earshot.CodeInvalidRequest)

	twice := seal(t, secret, 1, pushEvent("evt-check-4", earshot.EventAudioReady, "check_4", audioData()))
	status, code = p.post(ctx, twice, check)
	expectAnswer(t, "an envelope the first time", status, code, earshot.CodeOK)
	p.waitCall(ctx, "check_4")
	status, code = p.post(ctx, twice, check)
	expectAnswer(t, "the same envelope again", status, code, earshot.CodeReplayed)

	extra := pushEvent("evt-check-5", earshot.EventTranscriptReady, "check_5", map[string]interface{}{
		"deviceUid": "DEV-1", "title": "Call", "transcriptId": 7001, "transcriptText": "Hello.",
		"transcriptSentences": `[{"text":"Hello.","beginTime":0,"endTime":900,"speaker":"A"}]`,
		"durationMs":          900, "wordsCount": 1, "newDataField": map[string]int{"x": 1},
	})
	extra["newEventField"] = []int{1, 2}
	status, code = p.post(ctx, withField(t, seal(t, secret, 1, extra), "newEnvelopeField", "x"), check)
	expectAnswer(t, "unknown extra fields", status, code, earshot.CodeOK)
	p.waitCall(ctx, "check_5")

	deletion := seal(t, secret, 1, pushEvent("evt-check-6", earshot.EventDeleted, "check_1", map[string]interface{}{}))
	status, code = p.post(ctx, deletion, check)
	expectAnswer(t, "a recording.deleted", status, code, earshot.CodeOK)
	if p.storedCount() != 0 {
		t.Fatalf("a check push was handed to Store: %+v", p.stored)
	}

	for eventID, state := range map[string]string{"evt-check-1": earshot.CallbackConfirmed,
		"evt-check-4": earshot.CallbackConfirmed, "evt-check-5": earshot.CallbackConfirmed, "evt-check-6": earshot.CallbackSkipped} {
		waitState(t, ctx, p.outbox, eventID, state)
	}
	callbacks, err := p.outbox.Callbacks(ctx, "")
	if err != nil || len(callbacks) != 4 {
		t.Fatalf("callbacks %+v %v", callbacks, err)
	}
	p.noCallPending()
}

// Only the header and a check_ audioId together make a push the check's: either alone is stored.
func TestReceiverStoresAPushWithTheCheckHeaderOrPrefixAlone(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	p := newPartner(t, nil)
	extra := pushEvent("evt-marked", earshot.EventTranscriptReady, "aud_marked", map[string]interface{}{
		"deviceUid": "DEV-1", "title": "Call", "transcriptId": 7001, "transcriptText": "Hello.",
		"transcriptSentences": `[{"text":"Hello.","beginTime":0,"endTime":900,"speaker":"A"}]`,
		"durationMs":          900, "wordsCount": 1, "newDataField": map[string]int{"x": 1},
	})
	extra["newEventField"] = []int{1, 2}
	status, code := p.post(ctx, withField(t, seal(t, secret, 1, extra), "newEnvelopeField", "x"),
		map[string]string{"X-Earshot-Check": "1"})
	expectAnswer(t, "the header on a recording's push", status, code, earshot.CodeOK)
	p.waitCall(ctx, "aud_marked")
	named := seal(t, secret, 1, pushEvent("evt-named", earshot.EventAudioReady, "check_named", audioData()))
	status, code = p.post(ctx, named, nil)
	expectAnswer(t, "a check_ audioId without the header", status, code, earshot.CodeOK)
	p.waitCall(ctx, "check_named")
	if p.storedCount() != 2 {
		t.Fatalf("stored %+v", p.stored)
	}
	if s := p.stored[0]; len(s.Sentences) != 1 || s.Sentences[0].EndTime != 900 || !strings.Contains(string(s.Data.Raw), "newDataField") {
		t.Fatalf("stored %+v", s)
	}
	if s := p.stored[1]; s.AudioID != "check_named" || s.Data.RecordedAt != "2026-11-02T01:00:00Z" {
		t.Fatalf("stored %+v", s)
	}
	p.noCallPending()
}

func mustField(t *testing.T, body []byte, field string) string {
	var fields map[string]interface{}
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	return fields[field].(string)
}

func TestReceiverRefusesBadEventsWithoutTakingTheirNonce(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	p := newPartner(t, nil)
	noTitle := audioData()
	delete(noTitle, "title")
	bad := seal(t, secret, 1, pushEvent("evt-bad", earshot.EventAudioReady, "aud_bad", noTitle))
	status, code := p.post(ctx, bad, nil)
	expectAnswer(t, "data without a title", status, code, earshot.CodeInvalidParameter)
	status, code = p.post(ctx, bad, nil)
	expectAnswer(t, "the same again", status, code, earshot.CodeInvalidParameter)
	otherType := seal(t, secret, 1, pushEvent("evt-bad-2", "recording.exploded", "aud_bad", audioData()))
	status, code = p.post(ctx, otherType, nil)
	expectAnswer(t, "an unknown eventType", status, code, earshot.CodeInvalidParameter)
	mismatch := withField(t, seal(t, secret, 1, pushEvent("evt-bad-3", earshot.EventAudioReady, "aud_bad", audioData())), "eventId", "evt-other")
	status, code = p.post(ctx, mismatch, nil)
	expectAnswer(t, "an envelope eventId that is not the event's", status, code, earshot.CodeInvalidParameter)
	if p.storedCount() != 0 {
		t.Fatal("a refused push was stored")
	}
}

func TestReceiverAnswers5000WhenStoreFailsAndStoresOnTheNextPush(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	p := newPartner(t, nil)
	p.failWith = errors.New("disk full")
	status, code := p.post(ctx, seal(t, secret, 1, pushEvent("evt-fail", earshot.EventAudioReady, "aud_fail", audioData())), nil)
	expectAnswer(t, "Store failing", status, code, earshot.CodeInternalError)
	p.mu.Lock()
	p.failWith = nil
	p.mu.Unlock()
	status, code = p.post(ctx, seal(t, secret, 1, pushEvent("evt-fail", earshot.EventAudioReady, "aud_fail", audioData())), nil)
	expectAnswer(t, "the push again", status, code, earshot.CodeOK)
	p.waitCall(ctx, "aud_fail")
	if p.storedCount() != 1 {
		t.Fatalf("stored %d times", p.storedCount())
	}
}

func TestReceiverStoresAnEventOnceWhenPushedManyTimesAtOnce(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	p := newPartner(t, nil)
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, codes[i] = p.post(ctx, seal(t, secret, 1, pushEvent("evt-burst", earshot.EventAudioReady, "aud_burst", audioData())), nil)
		}(i)
	}
	wg.Wait()
	for i, code := range codes {
		if code != earshot.CodeOK {
			t.Fatalf("push %d answered %d", i, code)
		}
	}
	if p.storedCount() != 1 {
		t.Fatalf("stored %d times", p.storedCount())
	}
	p.waitCall(ctx, "aud_burst")
}

func TestReceiverKeysByVersionDuringARotation(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	db, _ := testDB(t)
	calls := make(chan string, 10)
	confirm := func(_ context.Context, audioID string) error { calls <- audioID; return nil }
	outbox := fastOutbox(t, db, confirm, confirm)
	receiver, err := earshot.NewReceiver(earshot.ReceiverConfig{
		Secrets: map[int]string{1: secret, 2: "0123456789abcdefghijklmnopqrstuv"},
		Outbox:  outbox, Logf: t.Logf,
		Store: func(context.Context, *earshot.PushEvent) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(receiver)
	defer server.Close()
	p := &partner{t: t, url: server.URL}
	status, code := p.post(ctx, seal(t, "0123456789abcdefghijklmnopqrstuv", 2, pushEvent("evt-k2", earshot.EventAudioReady, "aud_k2", audioData())), nil)
	expectAnswer(t, "keyVersion 2", status, code, earshot.CodeOK)
	status, code = p.post(ctx, seal(t, "0123456789abcdefghijklmnopqrstuv", 1, pushEvent("evt-k1", earshot.EventAudioReady, "aud_k1", audioData())), nil)
	expectAnswer(t, "keyVersion 1 sealed with key 2", status, code, earshot.CodeDecryptionFailed)
	select {
	case got := <-calls:
		if got != "aud_k2" {
			t.Fatalf("callback of %s", got)
		}
	case <-ctx.Done():
		t.Fatal("no callback")
	}
}
