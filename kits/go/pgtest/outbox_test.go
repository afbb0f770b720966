package pgtest

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
)

// waitState polls the outbox until the callback of eventID is in state.
func waitState(t *testing.T, ctx context.Context, outbox *earshot.Outbox, eventID, state string) earshot.Callback {
	t.Helper()
	for {
		callbacks, err := outbox.Callbacks(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range callbacks {
			if c.EventID == eventID && c.State == state {
				return c
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the callback of %s never became %s: %+v", eventID, state, callbacks)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestOutboxRetriesACallbackUntilConfirmed(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	var attempts int32
	p := newPartner(t, func(context.Context, string) error {
		if atomic.AddInt32(&attempts, 1) < 3 {
			return &earshot.Error{Code: earshot.CodeUnavailable, Msg: "busy"}
		}
		return nil
	})
	status, code := p.post(ctx, seal(t, secret, 1, pushEvent("evt-retry", earshot.EventAudioReady, "aud_retry", audioData())), nil)
	expectAnswer(t, "a push", status, code, earshot.CodeOK)
	c := waitState(t, ctx, p.outbox, "evt-retry", earshot.CallbackConfirmed)
	if c.Attempts != 3 || c.LastError != "" || c.DoneAt == nil {
		t.Fatalf("%+v", c)
	}
}

func TestOutboxStopsOnARefusalForGood(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	p := newPartner(t, func(context.Context, string) error {
		return &earshot.Error{Code: earshot.CodeNotFound, Msg: "no such recording"}
	})
	status, code := p.post(ctx, seal(t, secret, 1, pushEvent("evt-gone", earshot.EventAudioReady, "aud_gone", audioData())), nil)
	expectAnswer(t, "a push", status, code, earshot.CodeOK)
	if c := waitState(t, ctx, p.outbox, "evt-gone", earshot.CallbackFailed); c.Attempts != 1 {
		t.Fatalf("%+v", c)
	}
}

// A receiver that stops before its callback went out hands it back; another outbox on the same
// database sends it.
func TestAnotherOutboxSendsWhatAClosedOneHeld(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	db, _ := testDB(t)
	blocked := make(chan string, 1)
	block := func(ctx context.Context, audioID string) error {
		blocked <- audioID
		<-ctx.Done()
		return ctx.Err()
	}
	first := fastOutbox(t, db, block, block)
	receiver, _ := earshot.NewReceiver(earshot.ReceiverConfig{
		Secrets: map[int]string{1: secret}, Outbox: first, Logf: t.Logf,
		Store: func(context.Context, *earshot.PushEvent) error { return nil },
	})
	server := httptest.NewServer(receiver)
	defer server.Close()
	p := &partner{t: t, url: server.URL}
	status, code := p.post(ctx, seal(t, secret, 1, pushEvent("evt-handover", earshot.EventAudioReady, "aud_handover", audioData())), nil)
	expectAnswer(t, "a push", status, code, earshot.CodeOK)
	<-blocked
	closing, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := first.Close(closing); err != nil {
		t.Fatal(err)
	}
	confirmed := make(chan string, 1)
	confirm := func(_ context.Context, audioID string) error { confirmed <- audioID; return nil }
	second := fastOutbox(t, db, confirm, confirm)
	select {
	case got := <-confirmed:
		if got != "aud_handover" {
			t.Fatalf("callback of %s", got)
		}
	case <-ctx.Done():
		t.Fatal("the second outbox never sent the callback")
	}
	waitState(t, ctx, second, "evt-handover", earshot.CallbackConfirmed)
}

// Receivers sharing one database refuse each other's nonces and share the receipts.
func TestReceiversSharingADatabase(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	db, _ := testDB(t)
	var stores int32
	urls := make([]string, 2)
	for i := range urls {
		confirm := func(context.Context, string) error { return nil }
		outbox := fastOutbox(t, db, confirm, confirm)
		receiver, _ := earshot.NewReceiver(earshot.ReceiverConfig{
			Secrets: map[int]string{1: secret}, Outbox: outbox, Logf: t.Logf,
			Store: func(context.Context, *earshot.PushEvent) error { atomic.AddInt32(&stores, 1); return nil },
		})
		server := httptest.NewServer(receiver)
		t.Cleanup(server.Close)
		urls[i] = server.URL
	}
	body := seal(t, secret, 1, pushEvent("evt-shared", earshot.EventAudioReady, "aud_shared", audioData()))
	a, b := &partner{t: t, url: urls[0]}, &partner{t: t, url: urls[1]}
	status, code := a.post(ctx, body, nil)
	expectAnswer(t, "the first receiver", status, code, earshot.CodeOK)
	status, code = b.post(ctx, body, nil)
	expectAnswer(t, "the same envelope to the second", status, code, earshot.CodeReplayed)
	status, code = b.post(ctx, seal(t, secret, 1, pushEvent("evt-shared", earshot.EventAudioReady, "aud_shared", audioData())), nil)
	expectAnswer(t, "the same event to the second", status, code, earshot.CodeOK)
	if n := atomic.LoadInt32(&stores); n != 1 {
		t.Fatalf("stored %d times", n)
	}
}
