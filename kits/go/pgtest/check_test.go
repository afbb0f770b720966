package pgtest

import (
	"context"
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
	creds, client := newEnterprise(ctx, t, p)
	pushURL := serveReceiver(t, db, creds, client, func(context.Context, *earshot.PushEvent) error { return nil })

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
}
