package platformtests

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
	"github.com/earshot/earshot/kits/go/platformtests/platformtest"
)

// countingTransport counts the requests to each path.
type countingTransport struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[req.URL.Path]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (c *countingTransport) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[path]
}

// newEnterprise creates an enterprise with the recordings of jsonl, and a client for it.
func newEnterprise(t *testing.T, ctx context.Context, p *platformtest.Platform, jsonl string) (*earshot.Client, platformtest.Credentials, *countingTransport) {
	t.Helper()
	creds, err := p.CreateEnterprise(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	if jsonl != "" {
		if _, err := p.Import(ctx, creds.EnterpriseID, jsonl); err != nil {
			t.Fatal(err)
		}
	}
	counter := &countingTransport{}
	client, err := earshot.NewClient(earshot.Config{
		BaseURL:      p.PartnerURL,
		EnterpriseID: creds.EnterpriseID,
		KeyVersion:   creds.KeyVersion,
		Secret:       creds.Secret,
		HTTPClient:   &http.Client{Transport: counter},
	})
	if err != nil {
		t.Fatal(err)
	}
	return client, creds, counter
}

// recordingsJSONL makes n recordings of prefix, an hour apart from 2026-11-01T00:00Z, every
// third one with a transcript, on devices DEV-A and DEV-B in turn.
func recordingsJSONL(prefix string, n int) string {
	var lines []string
	for i := 0; i < n; i++ {
		at := time.Date(2026, 11, 1, i, 0, 0, 0, time.UTC).Format(time.RFC3339)
		device := []string{"DEV-A", "DEV-B"}[i%2]
		line := fmt.Sprintf(`{"audioId":"%s_%02d","deviceUid":"%s","title":"Recording %d","recordedAt":"%s","denoiseUrl":"https://cdn.example.com/%d.mp3","recordDuration":%d`,
			prefix, i, device, i, at, i, 1000*i)
		if i%3 == 0 {
			line += fmt.Sprintf(`,"transcript":{"transcriptId":%d,"transcriptText":"Hello %d.","sentences":[{"text":"Hello %d.","beginTime":0,"endTime":900}],"durationMs":900,"wordsCount":2}`, 100+i, i, i)
		}
		lines = append(lines, line+"}")
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestPlatformTokenIsFetchedOnceAndShared(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	client, _, counter := newEnterprise(t, ctx, testPlatform(t), "")
	var wg sync.WaitGroup
	tokens := make([]string, 16)
	errs := make([]error, 16)
	for i := range tokens {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			tokens[i], errs[i] = client.Token(ctx)
		}(i)
	}
	wg.Wait()
	for i := range tokens {
		if errs[i] != nil || tokens[i] == "" || tokens[i] != tokens[0] {
			t.Fatalf("token %d: %q %v (first %q)", i, tokens[i], errs[i], tokens[0])
		}
	}
	if _, err := client.QueryAudios(ctx, earshot.Filter{}); err != nil {
		t.Fatal(err)
	}
	if n := counter.count(tokenPath); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
}

func TestPlatformQueryFiltersAndPages(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	prefix := "q" + uniqueID()
	client, _, _ := newEnterprise(t, ctx, testPlatform(t), recordingsJSONL(prefix, 9))

	first, err := client.QueryAudios(ctx, earshot.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Total != 9 || len(first.Items) != 9 || first.Page != 1 || first.Size != 20 {
		t.Fatalf("first page: total %d, %d items, page %d size %d", first.Total, len(first.Items), first.Page, first.Size)
	}
	if first.Items[0].AudioID != prefix+"_08" || first.Items[8].AudioID != prefix+"_00" {
		t.Fatalf("not newest first: %s … %s", first.Items[0].AudioID, first.Items[8].AudioID)
	}
	transcript := first.Items[8].Data
	sentences, err := transcript.Sentences()
	if err != nil || !transcript.HasTranscript() || len(sentences) != 1 || sentences[0].Text != "Hello 0." {
		t.Fatalf("set A: %+v %v %v", transcript, sentences, err)
	}
	if audio := first.Items[0].Data; audio.HasTranscript() || audio.DenoiseURL == "" || audio.RecordDuration == nil ||
		*audio.RecordDuration != 8000 || len(audio.Raw) == 0 {
		t.Fatalf("set B: %+v", audio)
	}

	var seen []string
	filter := earshot.Filter{
		DeviceUID: "DEV-A",
		StartTime: time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC),
		EndTime:   time.Date(2026, 11, 1, 8, 0, 0, 0, time.FixedZone("", 3600)), // 07:00Z, excluded
		Size:      2,
	}
	pages := 0
	err = client.EachAudioPage(ctx, filter, func(page *earshot.AudioPage) error {
		pages++
		if page.Total != 3 {
			return fmt.Errorf("total %d, want 3", page.Total)
		}
		for _, item := range page.Items {
			seen = append(seen, item.AudioID)
		}
		return nil
	})
	if err != nil || pages != 2 || strings.Join(seen, ",") != prefix+"_06,"+prefix+"_04,"+prefix+"_02" {
		t.Fatalf("DEV-A from 02:00 to 07:00: %v in %d pages, %v", seen, pages, err)
	}

	seen, pages = nil, 0
	err = client.EachAudioPage(ctx, earshot.Filter{Size: 4}, func(page *earshot.AudioPage) error {
		pages++
		for _, item := range page.Items {
			seen = append(seen, item.AudioID)
		}
		return nil
	})
	if err != nil || pages != 3 || len(seen) != 9 {
		t.Fatalf("every page of 4: %d pages, %v, %v", pages, seen, err)
	}

	past, err := client.QueryAudios(ctx, earshot.Filter{Page: 5, Size: 4})
	if err != nil || len(past.Items) != 0 || past.Total != 9 {
		t.Fatalf("a page past the end: %+v %v", past, err)
	}
	one, err := client.QueryAudios(ctx, earshot.Filter{AudioID: prefix + "_03"})
	if err != nil || one.Total != 1 || one.Items[0].Data.Title != "Recording 3" {
		t.Fatalf("by audioId: %+v %v", one, err)
	}
}

func TestPlatformChangeFeedFollowsNextCursor(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	prefix := "c" + uniqueID()
	p := testPlatform(t)
	client, creds, _ := newEnterprise(t, ctx, p, recordingsJSONL(prefix, 5))
	if err := p.DeleteRecording(ctx, creds.EnterpriseID, prefix+"_01"); err != nil {
		t.Fatal(err)
	}
	var changes []earshot.Change
	cursor := ""
	pages := 0
	err := client.EachChangePage(ctx, "", 2, func(page *earshot.ChangePage) error {
		pages++
		changes = append(changes, page.Items...)
		cursor = page.NextCursor
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 5 created (with their transcripts), 1 deletion.
	if len(changes) != 6 || pages != 3 {
		t.Fatalf("%d changes in %d pages: %+v", len(changes), pages, changes)
	}
	deleted := 0
	for i, change := range changes {
		if change.Seq != int64(i+1) {
			t.Fatalf("change %d has seq %d", i, change.Seq)
		}
		if change.AudioID == prefix+"_01" {
			if change.Data != nil {
				t.Fatalf("a deleted recording's change has data: %+v", change)
			}
			if change.Change == earshot.ChangeDeleted {
				deleted++
			}
		} else if change.Data == nil || change.Data.DeviceUID == "" {
			t.Fatalf("change without data: %+v", change)
		}
	}
	if deleted != 1 {
		t.Fatalf("%d deletions", deleted)
	}
	later, err := client.Changes(ctx, cursor, 0)
	if err != nil || len(later.Items) != 0 || later.HasMore {
		t.Fatalf("after the last cursor: %+v %v", later, err)
	}
	stop := errors.New("stop")
	if err := client.EachChangePage(ctx, "", 1, func(*earshot.ChangePage) error { return stop }); err != stop {
		t.Fatalf("fn's error: %v", err)
	}
}

func TestPlatformEnterpriseRequiringIssuedAtTakesEveryRequest(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	prefix := "i" + uniqueID()
	p := testPlatform(t)
	client, creds, _ := newEnterprise(t, ctx, p, recordingsJSONL(prefix, 1))
	if err := p.RequireIssuedAt(ctx, creds.EnterpriseID, true); err != nil {
		t.Fatal(err)
	}
	page, err := client.QueryAudios(ctx, earshot.Filter{})
	if err != nil || page.Total != 1 {
		t.Fatalf("query: %+v %v", page, err)
	}
	if _, err := client.Changes(ctx, "", 0); err != nil {
		t.Fatal(err)
	}
	if err := client.ConfirmReceipt(ctx, prefix+"_00"); err != nil {
		t.Fatal(err)
	}
}

func TestPlatformRefusalsAreTypedErrors(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	p := testPlatform(t)
	client, creds, _ := newEnterprise(t, ctx, p, "")

	err := client.ConfirmReceipt(ctx, "aud_nobody_has")
	var apiErr *earshot.Error
	if !errors.As(err, &apiErr) || apiErr.Code != earshot.CodeNotFound || apiErr.RequestID == "" || apiErr.HTTPStatus != 404 {
		t.Fatalf("an unknown audioId: %#v", err)
	}
	if !errors.Is(err, &earshot.Error{Code: earshot.CodeNotFound}) || errors.Is(err, &earshot.Error{Code: earshot.CodeForbidden}) {
		t.Fatalf("errors.Is by code: %v", err)
	}

	_, err = client.QueryAudios(ctx, earshot.Filter{Size: 101})
	if !errors.As(err, &apiErr) || apiErr.Code != earshot.CodeInvalidParameter || apiErr.RequestID != "" ||
		!strings.HasPrefix(apiErr.Msg, "size") {
		t.Fatalf("size 101, refused before sending: %#v", err)
	}

	wrong, _ := earshot.NewClient(earshot.Config{BaseURL: p.PartnerURL, EnterpriseID: creds.EnterpriseID, KeyVersion: 1,
		Secret: "0123456789abcdefghijklmnopqrstuv"})
	_, err = wrong.Token(ctx)
	if !errors.As(err, &apiErr) || apiErr.Code != earshot.CodeDecryptionFailed {
		t.Fatalf("a wrong secret: %#v", err)
	}
}
