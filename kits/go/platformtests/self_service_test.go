package platformtests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
	"github.com/earshot/earshot/kits/go/platformtests/platformtest"
)

// downReceiver is a push URL that opens each push with the enterprise's key and answers HTTP 500
// {"code":5000,…} until it is fixed, then 2000 and the receipt callback. It stores nothing.
type downReceiver struct {
	key    *earshot.Key
	client *earshot.Client
	mu     sync.Mutex
	fixed  bool
	URL    string
}

const downAnswer = `{"code":5000,"msg":"the receiver's database is down"}`

func newDownReceiver(t *testing.T, client *earshot.Client, creds platformtest.Credentials) *downReceiver {
	t.Helper()
	key, err := earshot.LoadKey(creds.Secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &downReceiver{key: key, client: client}
	server := httptest.NewServer(r)
	t.Cleanup(server.Close)
	r.URL = server.URL + earshot.DefaultPushPath
	return r
}

func (r *downReceiver) fix() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fixed = true
}

func (r *downReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	_, plaintext, err := r.key.Open(body)
	var event struct {
		AudioID string `json:"audioId"`
	}
	if err != nil || json.Unmarshal(plaintext, &event) != nil {
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"code":4000,"msg":"not a push"}`)
		return
	}
	r.mu.Lock()
	fixed := r.fixed
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !fixed {
		w.WriteHeader(500)
		_, _ = io.WriteString(w, downAnswer)
		return
	}
	_, _ = io.WriteString(w, `{"code":2000,"msg":"success"}`)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.client.ConfirmReceipt(ctx, event.AudioID)
	}()
}

// eventually calls check every 200 ms until it says done, or ctx ends (the last error is returned).
func eventually(ctx context.Context, what string, check func() (bool, error)) error {
	var last error
	for {
		done, err := check()
		if done && err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not so before the test's time ran out (last error: %v)", what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// allDeliveries is every delivery matching the filter, page after page.
func allDeliveries(ctx context.Context, client *earshot.Client, filter earshot.DeliveryFilter) ([]earshot.Delivery, int, error) {
	var all []earshot.Delivery
	pages := 0
	err := client.EachDeliveryPage(ctx, filter, func(page *earshot.DeliveryPage) error {
		pages++
		all = append(all, page.Items...)
		return nil
	})
	return all, pages, err
}

// inStates waits until there are want deliveries of the filter, all in one of states.
func inStates(ctx context.Context, client *earshot.Client, filter earshot.DeliveryFilter, want int, states ...string) ([]earshot.Delivery, error) {
	var last []earshot.Delivery
	err := eventually(ctx, fmt.Sprintf("%d deliveries %v", want, states), func() (bool, error) {
		all, _, err := allDeliveries(ctx, client, filter)
		last = all
		if err != nil || len(all) != want {
			return false, err
		}
		for _, d := range all {
			if !contains(states, d.State) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w; last seen: %+v", err, last)
	}
	return last, nil
}

func contains(list []string, s string) bool {
	for _, each := range list {
		if each == s {
			return true
		}
	}
	return false
}

func TestPlatformPartnerManagesItsEndpoints(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	p := testPlatform(t)
	client, creds, _ := newEnterprise(t, ctx, p, "")
	other, _, _ := newEnterprise(t, ctx, p, "")
	pushURL := newDownReceiver(t, client, creds).URL

	added, err := client.AddEndpoint(ctx, earshot.NewEndpoint{URL: pushURL, EventTypes: []string{earshot.EventTranscriptReady},
		Description: "transcripts only"})
	if err != nil {
		t.Fatal(err)
	}
	if added.EnterpriseID != creds.EnterpriseID || strings.Join(added.EventTypes, ",") != earshot.EventTranscriptReady ||
		!added.Enabled || added.MaxPerSecond != nil || added.Description != "transcripts only" || added.CreatedAt.IsZero() {
		t.Fatalf("added: %+v", added)
	}
	listed, err := client.ListEndpoints(ctx)
	if err != nil || len(listed) != 1 || listed[0].EndpointID != added.EndpointID || listed[0].Health.State == "" {
		t.Fatalf("listed: %+v %v", listed, err)
	}

	limit, description, disabled := 5, "CRM, transcripts only", false
	updated, err := client.UpdateEndpoint(ctx, added.EndpointID, earshot.EndpointChanges{MaxPerSecond: &limit,
		Description: &description, Enabled: &disabled})
	if err != nil || updated.MaxPerSecond == nil || *updated.MaxPerSecond != 5 || updated.Description != description ||
		updated.Enabled || strings.Join(updated.EventTypes, ",") != earshot.EventTranscriptReady {
		t.Fatalf("updated: %+v %v", updated, err)
	}
	noLimit, enabled := 0, true
	updated, err = client.UpdateEndpoint(ctx, added.EndpointID, earshot.EndpointChanges{MaxPerSecond: &noLimit, Enabled: &enabled})
	if err != nil || updated.MaxPerSecond != nil || !updated.Enabled {
		t.Fatalf("limit removed, enabled: %+v %v", updated, err)
	}

	// Another enterprise's endpoint is as unknown as one that never was.
	theirs, err := other.AddEndpoint(ctx, earshot.NewEndpoint{URL: pushURL + "/theirs"})
	if err != nil {
		t.Fatal(err)
	}
	for what, call := range map[string]func() error{
		"update theirs": func() error {
			_, err := client.UpdateEndpoint(ctx, theirs.EndpointID, earshot.EndpointChanges{Description: &description})
			return err
		},
		"remove theirs":  func() error { _, err := client.RemoveEndpoint(ctx, theirs.EndpointID); return err },
		"remove unknown": func() error { _, err := client.RemoveEndpoint(ctx, 1<<40); return err },
	} {
		var apiErr *earshot.Error
		if err := call(); !errors.As(err, &apiErr) || apiErr.Code != earshot.CodeNotFound || apiErr.RequestID == "" {
			t.Errorf("%s: %#v", what, err)
		}
	}
	if kept, err := other.ListEndpoints(ctx); err != nil || len(kept) != 1 || kept[0].Description != "" {
		t.Fatalf("the other enterprise's endpoint changed: %+v %v", kept, err)
	}

	var apiErr *earshot.Error
	_, err = client.AddEndpoint(ctx, earshot.NewEndpoint{URL: pushURL, EventTypes: []string{"recording.archived"}})
	if !errors.As(err, &apiErr) || apiErr.Code != earshot.CodeInvalidParameter || !strings.Contains(apiErr.Msg, "eventTypes") {
		t.Fatalf("an unknown event type: %#v", err)
	}

	removed, err := client.RemoveEndpoint(ctx, added.EndpointID)
	if err != nil || removed.EndpointID != added.EndpointID {
		t.Fatalf("removed: %+v %v", removed, err)
	}
	if left, err := client.ListEndpoints(ctx); err != nil || len(left) != 0 {
		t.Fatalf("after the removal: %+v %v", left, err)
	}
}

// A partner sees its failed deliveries with the receiver's answers, fixes its receiver, replays them
// since a time, and reads its service levels.
func TestPlatformPartnerReplaysWhatFailed(t *testing.T) {
	ctx := testContext(t, 150*time.Second)
	p := testPlatform(t)
	client, creds, _ := newEnterprise(t, ctx, p, "")
	receiver := newDownReceiver(t, client, creds)
	endpoint, err := client.AddEndpoint(ctx, earshot.NewEndpoint{URL: receiver.URL, EventTypes: []string{earshot.EventTranscriptReady}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Second)
	// Two of the four have a transcript: two deliveries, of transcript_ready only.
	if _, err := p.Import(ctx, creds.EnterpriseID, recordingsJSONL("r"+uniqueID(), 4)); err != nil {
		t.Fatal(err)
	}
	transcripts := earshot.DeliveryFilter{EventType: earshot.EventTranscriptReady, Since: start, Size: 1}
	failed, err := inStates(ctx, client, transcripts, 2, earshot.DeliveryFailed)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range failed {
		if d.EndpointID != endpoint.EndpointID || len(d.Attempts) < 2 || d.CreatedAt.Before(start) {
			t.Fatalf("a failed delivery: %+v", d)
		}
		first := d.Attempts[0]
		if first.HTTPStatus == nil || *first.HTTPStatus != 500 || first.Answer == nil || *first.Answer != downAnswer ||
			first.StartedAt.IsZero() {
			t.Fatalf("its first attempt: %+v", first)
		}
	}
	if _, pages, err := allDeliveries(ctx, client, transcripts); err != nil || pages != 2 {
		t.Fatalf("2 deliveries by pages of 1: %d pages, %v", pages, err)
	}
	if others, err := client.ListDeliveries(ctx, earshot.DeliveryFilter{EventType: earshot.EventAudioReady}); err != nil ||
		len(others.Items) != 0 || others.HasMore {
		t.Fatalf("audio_ready deliveries to a transcripts-only endpoint: %+v %v", others, err)
	}

	receiver.fix()
	replayed, err := client.ReplaySince(ctx, []string{earshot.DeliveryFailed, earshot.DeliveryUnconfirmed}, start)
	if err != nil || replayed != 2 {
		t.Fatalf("replayed %d: %v", replayed, err)
	}
	if _, err := inStates(ctx, client, transcripts, 2, earshot.DeliveryConfirmed); err != nil {
		t.Fatal(err)
	}

	for _, window := range []string{earshot.LevelsLastDay, earshot.LevelsLastWeek} {
		var levels *earshot.Levels
		// The figures may lag a few seconds behind the deliveries.
		err := eventually(ctx, "the levels of "+window+" count the deliveries, none waiting", func() (bool, error) {
			var err error
			levels, err = client.Levels(ctx, window)
			return err == nil && levels.FirstAttemptAckShare != nil && levels.FirstAttemptP95Ms != nil && levels.Backlog == 0, err
		})
		if err != nil {
			t.Fatal(err)
		}
		// Every first attempt failed; the replays were acknowledged and called back.
		if *levels.FirstAttemptAckShare != 0 || levels.FirstAttemptP50Ms == nil || *levels.FirstAttemptP50Ms < 0 ||
			*levels.FirstAttemptP95Ms < *levels.FirstAttemptP50Ms {
			t.Fatalf("levels of %s: %s", window, levelsText(levels))
		}
	}
	var apiErr *earshot.Error
	if _, err := client.ReplayDelivery(ctx, 1<<40); !errors.As(err, &apiErr) || apiErr.Code != earshot.CodeNotFound {
		t.Fatalf("an unknown delivery's replay: %#v", err)
	}
}

func levelsText(l *earshot.Levels) string {
	text := func(f *float64) string {
		if f == nil {
			return "null"
		}
		return fmt.Sprint(*f)
	}
	return fmt.Sprintf("p50 %s, p95 %s, ack share %s, ack to receipt p95 %s, backlog %d", text(l.FirstAttemptP50Ms),
		text(l.FirstAttemptP95Ms), text(l.FirstAttemptAckShare), text(l.AckToReceiptP95Ms), l.Backlog)
}

func TestPlatformRotatedKeyIsUsedFromThenOn(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	p := testPlatform(t)
	client, creds, counter := newEnterprise(t, ctx, p, recordingsJSONL("k"+uniqueID(), 2))
	if _, err := client.QueryAudios(ctx, earshot.Filter{}); err != nil {
		t.Fatal(err)
	}
	rotated, err := client.RotateKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.KeyVersion == creds.KeyVersion || rotated.Secret == creds.Secret || client.KeyVersion() != rotated.KeyVersion {
		t.Fatalf("rotated from %d to %+v; the client seals with %d", creds.KeyVersion, rotated, client.KeyVersion())
	}
	page, err := client.QueryAudios(ctx, earshot.Filter{})
	if err != nil || page.Total != 2 {
		t.Fatalf("query after the rotation: %+v %v", page, err)
	}
	if n := counter.count(tokenPath); n != 2 {
		t.Fatalf("%d token requests: the client did not take a token for its new key", n)
	}
	for what, cfg := range map[string]earshot.Config{
		"the new secret":               {KeyVersion: rotated.KeyVersion, Secret: rotated.Secret},
		"the old secret, in its grace": {KeyVersion: creds.KeyVersion, Secret: creds.Secret},
	} {
		cfg.BaseURL, cfg.EnterpriseID = p.PartnerURL, creds.EnterpriseID
		fresh, err := earshot.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if page, err := fresh.QueryAudios(ctx, earshot.Filter{}); err != nil || page.Total != 2 {
			t.Fatalf("a query with %s: %+v %v", what, page, err)
		}
	}
}

func TestPlatformPortalLinkOpensASession(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	p := testPlatform(t)
	client, _, _ := newEnterprise(t, ctx, p, "")
	link, err := client.PortalLink(ctx, earshot.PortalView)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(link.URL, "/portal/enter/") || !link.ExpiresAt.After(time.Now()) {
		t.Fatalf("link: %+v", link)
	}
	var apiErr *earshot.Error
	if _, err := client.PortalLink(ctx, "owner"); !errors.As(err, &apiErr) || apiErr.Code != earshot.CodeInvalidParameter {
		t.Fatalf("access owner: %#v", err)
	}
}
