package pgtest

import (
	"context"
	"sync"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
)

// The platform's receiver check (earshot endpoints check) passes the kit's receiver on every item, the
// warning item included, and none of its pushes reaches Store.
func TestReceiverPassesThePlatformsCheck(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	p := testPlatform(t)
	db, _ := testDB(t)
	creds, client := newEnterprise(ctx, t, p)
	var mu sync.Mutex
	var stored []string
	pushURL, _ := serveReceiver(t, db, creds, client, func(_ context.Context, event *earshot.PushEvent) error {
		mu.Lock()
		defer mu.Unlock()
		stored = append(stored, event.AudioID+" "+event.EventType)
		return nil
	})

	report, err := p.CheckReceiver(ctx, creds.EnterpriseID, pushURL, 30)
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
	mu.Lock()
	defer mu.Unlock()
	if len(stored) != 0 {
		t.Fatalf("the check's pushes were handed to Store: %v", stored)
	}
}

// The partner runs the same check itself, through the partner API (the kit's CheckReceiver), against
// the kit's receiver: it passes, sealed with the enterprise's current key.
func TestReceiverPassesTheCheckThePartnerRuns(t *testing.T) {
	ctx := testContext(t, 120*time.Second)
	p := testPlatform(t)
	db, _ := testDB(t)
	creds, client := newEnterprise(ctx, t, p)
	var mu sync.Mutex
	stored := 0
	pushURL, _ := serveReceiver(t, db, creds, client, func(context.Context, *earshot.PushEvent) error {
		mu.Lock()
		defer mu.Unlock()
		stored++
		return nil
	})

	report, err := client.CheckReceiver(ctx, pushURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range report.Items {
		if !item.Passed {
			t.Errorf("%s (%s): %s; came back: %s", item.ID, item.Severity, item.Expected, item.Evidence)
		}
	}
	if !report.Passed || len(report.Items) != 9 || report.EnterpriseID != creds.EnterpriseID || report.KeyVersion != creds.KeyVersion {
		t.Fatalf("the check: %+v", report)
	}
	mu.Lock()
	defer mu.Unlock()
	if stored != 0 {
		t.Fatalf("%d of the check's pushes were handed to Store", stored)
	}
}
