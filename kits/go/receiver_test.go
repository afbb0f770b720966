package earshot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// Refusals that come before the envelope is opened need no outbox database.
func TestReceiverRefusesWhatIsNotAPush(t *testing.T) {
	receiver, err := NewReceiver(ReceiverConfig{
		Secrets:   map[int]string{1: testSecret},
		Outbox:    &Outbox{},
		Store:     func(context.Context, *PushEvent) error { return nil },
		BodyLimit: 1024,
		Logf:      t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		method, contentType, body string
		code                      int
	}{
		"GET":            {http.MethodGet, "application/json", "", CodeInvalidRequest},
		"text/plain":     {http.MethodPost, "text/plain", "{}", CodeUnsupportedMediaType},
		"too large":      {http.MethodPost, "application/json", strings.Repeat(" ", 1025), CodePayloadTooLarge},
		"not JSON":       {http.MethodPost, "application/json; charset=utf-8", "nope", CodeInvalidRequest},
		"no envelope":    {http.MethodPost, "application/json", `{"a":1}`, CodeInvalidRequest},
		"an unknown key": {http.MethodPost, "application/json", `{"specVersion":"1","alg":"A256GCM","keyVersion":9,"eventId":"e","nonce":"SPe+qYR1elCte/ks","ciphertext":"","tag":"HRkY8xwFFkcH+tpkV+ediQ=="}`, CodeDecryptionFailed},
	} {
		req := httptest.NewRequest(c.method, DefaultPushPath, strings.NewReader(c.body))
		req.Header.Set("Content-Type", c.contentType)
		w := httptest.NewRecorder()
		receiver.ServeHTTP(w, req)
		if w.Code != c.code/10 || !strings.Contains(w.Body.String(), `"code":`+itoa(c.code)) {
			t.Errorf("%s: HTTP %d %s, want %d", name, w.Code, w.Body.String(), c.code)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestReceiverConfigIsChecked(t *testing.T) {
	store := func(context.Context, *PushEvent) error { return nil }
	if _, err := NewReceiver(ReceiverConfig{Secrets: map[int]string{1: testSecret}}); err == nil {
		t.Error("no outbox and no store: accepted")
	}
	if _, err := NewReceiver(ReceiverConfig{Outbox: &Outbox{}, Store: store, Secrets: map[int]string{1: "short"}}); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("a bad secret: %v", err)
	}
	if _, err := NewReceiver(ReceiverConfig{Outbox: &Outbox{}, Store: store}); err == nil {
		t.Error("no secret: accepted")
	}
}
