package pgtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
)

// The platform's receiver check (earshot endpoints check) passes the kit's receiver on every item, the
// warning item included.
func TestReceiverPassesThePlatformsCheck(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	p := testPlatform(t)
	db, _ := testDB(t)
	creds, err := p.CreateEnterprise(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	client := newClient(t, p, creds)
	receiver, err := earshot.NewReceiver(earshot.ReceiverConfig{
		Secrets: map[int]string{creds.KeyVersion: creds.Secret},
		Outbox:  fastOutbox(t, db, client.ConfirmReceipt),
		Store:   func(context.Context, *earshot.PushEvent) error { return nil },
		Logf:    t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(earshot.DefaultPushPath, receiver)
	server := httptest.NewServer(mux)
	defer server.Close()

	report, err := p.CheckReceiver(ctx, creds.EnterpriseID, server.URL+earshot.DefaultPushPath, 30)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Items) != 9 {
		t.Fatalf("the check has 9 items: %+v", report)
	}
	for _, item := range report.Items {
		if !item.Passed {
			t.Errorf("%s (%s): %s; came back: %s", item.ID, item.Severity, item.Expected, item.Evidence)
		}
	}
	if !report.Passed {
		t.Fatalf("the check failed: %+v", report)
	}
}
