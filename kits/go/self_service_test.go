package earshot

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// endpointAnswer is an endpoint as the platform answers it.
func endpointAnswer(id int, url string, eventTypes ...string) map[string]interface{} {
	return map[string]interface{}{
		"endpointId": id, "enterpriseId": 42, "url": url, "eventTypes": eventTypes, "description": "crm",
		"enabled": true, "maxPerSecond": nil, "createdAt": "2026-11-29T10:00:00.123Z", "waiting": 2,
		"health": map[string]interface{}{"state": "failing", "reason": "HTTP 500", "lastSuccessAt": nil,
			"lastFailureAt": "2026-11-29T10:01:00Z"},
	}
}

// sent is the plaintext of the request n (from 0) without its issuedAt, as sorted "field=value" pairs.
func (f *fakePlatform) sent(n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n >= len(f.requests) {
		return fmt.Sprintf("no request %d (%d sent)", n, len(f.requests))
	}
	var pairs []string
	for field, value := range f.requests[n].plaintext {
		if field != "issuedAt" {
			pairs = append(pairs, fmt.Sprintf("%s=%v", field, value))
		}
	}
	sort.Strings(pairs)
	return f.requests[n].path + " " + strings.Join(pairs, " ")
}

func (f *fakePlatform) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func TestEndpointCallsSendTheirFieldsAndReadTheEndpoint(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.sealed = func(path string, p map[string]interface{}) (int, interface{}) {
		switch path {
		case endpointsListPath:
			return CodeOK, map[string]interface{}{"items": []interface{}{endpointAnswer(7, "https://a.example/push", EventTranscriptReady)}}
		case endpointsRemovePath:
			return CodeOK, map[string]interface{}{"endpointId": 7, "cancelled": 3}
		}
		return CodeOK, endpointAnswer(7, "https://a.example/push", EventTranscriptReady)
	}
	ctx := testContext(t, 10*time.Second)
	added, err := client.AddEndpoint(ctx, NewEndpoint{URL: "https://a.example/push", EventTypes: []string{EventTranscriptReady},
		Description: "crm", MaxPerSecond: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := "/openapi/v1/endpoints/add description=crm eventTypes=[recording.transcript_ready] maxPerSecond=5 url=https://a.example/push"
	if got := fake.sent(0); got != want {
		t.Fatalf("sent %s", got)
	}
	if added.EndpointID != 7 || added.MaxPerSecond != nil || added.Health.State != "failing" || added.Health.LastSuccessAt != nil ||
		added.Health.LastFailureAt == nil || added.CreatedAt.UnixMilli() != 1795946400123 || added.Waiting != 2 {
		t.Fatalf("read %+v", added)
	}
	listed, err := client.ListEndpoints(ctx)
	if err != nil || len(listed) != 1 || listed[0].EventTypes[0] != EventTranscriptReady || fake.sent(1) != endpointsListPath+" " {
		t.Fatalf("list: %+v %v (sent %s)", listed, err, fake.sent(1))
	}

	noLimit, disabled, description := 0, false, ""
	if _, err := client.UpdateEndpoint(ctx, 7, EndpointChanges{MaxPerSecond: &noLimit, Enabled: &disabled, Description: &description}); err != nil {
		t.Fatal(err)
	}
	if got := fake.sent(2); got != "/openapi/v1/endpoints/update description= enabled=false endpointId=7 maxPerSecond=<nil>" {
		t.Fatalf("update sent %s", got)
	}
	if _, err := client.UpdateEndpoint(ctx, 7, EndpointChanges{EventTypes: []string{EventAudioReady, EventDeleted}}); err != nil {
		t.Fatal(err)
	}
	if got := fake.sent(3); got != "/openapi/v1/endpoints/update endpointId=7 eventTypes=[recording.audio_ready recording.deleted]" {
		t.Fatalf("update sent %s", got)
	}
	removed, err := client.RemoveEndpoint(ctx, 7)
	if err != nil || removed.Cancelled != 3 || fake.sent(4) != "/openapi/v1/endpoints/remove endpointId=7" {
		t.Fatalf("remove: %+v %v (sent %s)", removed, err, fake.sent(4))
	}
}

func TestDeliveriesArePagedByCursor(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.sealed = func(path string, p map[string]interface{}) (int, interface{}) {
		n := map[interface{}]int{nil: 0, "c1": 1, "c2": 2}[p["cursor"]]
		attempts := []interface{}{
			map[string]interface{}{"startedAt": "2026-11-29T10:00:00Z", "durationMs": 12, "httpStatus": 500, "answer": `{"code":5000}`},
			map[string]interface{}{"startedAt": "2026-11-29T10:00:01Z", "durationMs": 10000, "httpStatus": nil, "answer": nil},
		}
		delivery := map[string]interface{}{"deliveryId": 10 + n, "endpointId": 7, "eventId": "e", "eventType": EventAudioReady,
			"audioId": "a", "state": DeliveryFailed, "createdAt": "2026-11-29T10:00:00Z", "attempts": attempts}
		next := map[int]interface{}{0: "c1", 1: "c2", 2: nil}[n]
		return CodeOK, map[string]interface{}{"items": []interface{}{delivery}, "nextCursor": next, "hasMore": next != nil}
	}
	ctx := testContext(t, 10*time.Second)
	since := time.Date(2026, 11, 29, 11, 0, 0, 123456789, time.FixedZone("", 3600))
	var seen []int64
	err := client.EachDeliveryPage(ctx, DeliveryFilter{State: DeliveryFailed, Since: since, Size: 1}, func(page *DeliveryPage) error {
		for _, d := range page.Items {
			seen = append(seen, d.DeliveryID)
			if len(d.Attempts) != 2 || *d.Attempts[0].HTTPStatus != 500 || *d.Attempts[0].Answer != `{"code":5000}` ||
				d.Attempts[1].HTTPStatus != nil || d.Attempts[1].Answer != nil || d.Attempts[1].DurationMs != 10000 {
				return fmt.Errorf("attempts read as %+v", d.Attempts)
			}
		}
		return nil
	})
	if err != nil || fmt.Sprint(seen) != "[10 11 12]" {
		t.Fatalf("pages: %v %v", seen, err)
	}
	if got := fake.sent(0); got != "/openapi/v1/deliveries/list since=2026-11-29T11:00:00.123456+01:00 size=1 state=failed" {
		t.Fatalf("first page sent %s", got)
	}
	if got := fake.sent(2); !strings.Contains(got, "cursor=c2") {
		t.Fatalf("third page sent %s", got)
	}
}

func TestReplayAndLevelsSendTheirFields(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.sealed = func(path string, p map[string]interface{}) (int, interface{}) {
		switch {
		case path == levelsPath:
			return CodeOK, map[string]interface{}{"firstAttemptP50Ms": 12.5, "firstAttemptP95Ms": nil,
				"firstAttemptAckShare": 0.75, "ackToReceiptP95Ms": nil, "backlog": 4}
		case p["deliveryId"] != nil:
			return CodeOK, map[string]interface{}{"replayed": true}
		}
		return CodeOK, map[string]interface{}{"replayed": 3}
	}
	ctx := testContext(t, 10*time.Second)
	if n, err := client.ReplayDelivery(ctx, 11); err != nil || n != 1 || fake.sent(0) != "/openapi/v1/deliveries/replay deliveryId=11" {
		t.Fatalf("replay one: %d %v (sent %s)", n, err, fake.sent(0))
	}
	since := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	n, err := client.ReplaySince(ctx, []string{DeliveryFailed, DeliveryUnconfirmed}, since)
	if err != nil || n != 3 || fake.sent(1) != "/openapi/v1/deliveries/replay since=2026-11-29T00:00:00Z states=[failed unconfirmed]" {
		t.Fatalf("replay since: %d %v (sent %s)", n, err, fake.sent(1))
	}
	levels, err := client.Levels(ctx, LevelsLastWeek)
	if err != nil || *levels.FirstAttemptP50Ms != 12.5 || levels.FirstAttemptP95Ms != nil || *levels.FirstAttemptAckShare != 0.75 ||
		levels.AckToReceiptP95Ms != nil || levels.Backlog != 4 || fake.sent(2) != "/openapi/v1/levels window=7d" {
		t.Fatalf("levels: %+v %v (sent %s)", levels, err, fake.sent(2))
	}
}

// After a rotation the client seals with the new key and takes a token issued for it; the rotation's
// own answer is sealed with the old key.
func TestRotateKeySwitchesTheClientToTheNewKey(t *testing.T) {
	fake, client := newFakePlatform(t)
	const newSecret = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	newKey, _ := LoadKey(newSecret)
	fake.sealed = func(path string, p map[string]interface{}) (int, interface{}) {
		if path == keyRotatePath {
			fake.mu.Lock()
			fake.keys[2] = newKey
			fake.mu.Unlock()
			return CodeOK, map[string]interface{}{"keyVersion": 2, "secret": newSecret}
		}
		return CodeOK, map[string]interface{}{"url": "https://api.example/portal/enter/x", "expiresAt": "2026-11-29T10:15:00Z"}
	}
	ctx := testContext(t, 10*time.Second)
	rotated, err := client.RotateKey(ctx)
	if err != nil || rotated.KeyVersion != 2 || rotated.Secret != newSecret || client.KeyVersion() != 2 {
		t.Fatalf("rotated: %+v %v (client at %d)", rotated, err, client.KeyVersion())
	}
	link, err := client.PortalLink(ctx, PortalView)
	if err != nil || link.ExpiresAt.IsZero() || fake.sent(1) != "/openapi/v1/portal/link access=view" {
		t.Fatalf("portal link: %+v %v (sent %s)", link, err, fake.sent(1))
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.requests[0].keyVersion != 1 || fake.requests[1].keyVersion != 2 || fmt.Sprint(fake.tokenKeyVersions) != "[1 2]" ||
		fake.requests[1].token != "Bearer token-2" {
		t.Fatalf("requests %+v, tokens asked with keyVersions %v", fake.requests, fake.tokenKeyVersions)
	}
}

func TestSelfServiceArgumentsAreCheckedBeforeSending(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.sealed = func(string, map[string]interface{}) (int, interface{}) { return CodeOK, map[string]interface{}{} }
	ctx := testContext(t, 10*time.Second)
	negative, badURL := -1, "ftp://a.example/"
	for field, call := range map[string]func() error{
		"url": func() error { _, err := client.AddEndpoint(ctx, NewEndpoint{URL: "/push"}); return err },
		"eventTypes": func() error {
			_, err := client.AddEndpoint(ctx, NewEndpoint{URL: "https://a.example", EventTypes: []string{}})
			return err
		},
		"maxPerSecond": func() error {
			_, err := client.UpdateEndpoint(ctx, 1, EndpointChanges{MaxPerSecond: &negative})
			return err
		},
		"endpointId": func() error { _, err := client.RemoveEndpoint(ctx, 0); return err },
		"url ":       func() error { _, err := client.UpdateEndpoint(ctx, 1, EndpointChanges{URL: &badURL}); return err },
		"url  ":      func() error { _, err := client.CheckReceiver(ctx, strings.Repeat("x", 3000)); return err },
		"size":       func() error { _, err := client.ListDeliveries(ctx, DeliveryFilter{Size: 101}); return err },
		"since":      func() error { _, err := client.ReplaySince(ctx, []string{DeliveryFailed}, time.Time{}); return err },
		"states":     func() error { _, err := client.ReplaySince(ctx, nil, time.Now()); return err },
		"deliveryId": func() error { _, err := client.ReplayDelivery(ctx, -4); return err },
		"window":     func() error { _, err := client.Levels(ctx, "30d"); return err },
		"access":     func() error { _, err := client.PortalLink(ctx, "admin"); return err },
	} {
		var apiErr *Error
		if err := call(); !errors.As(err, &apiErr) || apiErr.Code != CodeInvalidParameter ||
			!strings.HasPrefix(apiErr.Msg, strings.TrimSpace(field)+": ") || apiErr.HTTPStatus != 0 {
			t.Errorf("%s: %v", field, err)
		}
	}
	if n := fake.requestCount(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestSelfServiceRefusalsAreTypedErrors(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.sealed = func(string, map[string]interface{}) (int, interface{}) { return CodeNotFound, nil }
	_, err := client.UpdateEndpoint(testContext(t, 10*time.Second), 99, EndpointChanges{})
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Code != CodeNotFound || apiErr.RequestID != "req-1" || apiErr.HTTPStatus != 404 ||
		fake.requestCount() != 1 {
		t.Fatalf("%d requests: %#v", fake.requestCount(), err)
	}
}

// A call that changes something when repeated is retried after a refusal that did nothing, never
// after one that may have come after the change; an update (the same change again) is retried.
func TestChangingCallsAreRetriedOnlyWhenNothingWasDone(t *testing.T) {
	fake, client := newFakePlatform(t)
	var codes []int
	fake.sealed = func(path string, p map[string]interface{}) (int, interface{}) {
		code := codes[0]
		codes = codes[1:]
		return code, endpointAnswer(7, "https://a.example/push", EventAudioReady)
	}
	ctx := testContext(t, 20*time.Second)
	codes = []int{CodeInternalError, CodeOK}
	if _, err := client.AddEndpoint(ctx, NewEndpoint{URL: "https://a.example/push"}); !errors.Is(err, &Error{Code: CodeInternalError}) ||
		fake.requestCount() != 1 {
		t.Fatalf("add after 5000: %d requests, %v", fake.requestCount(), err)
	}
	codes = []int{CodeUnavailable, CodeRateLimited, CodeOK}
	if _, err := client.AddEndpoint(ctx, NewEndpoint{URL: "https://a.example/push"}); err != nil || fake.requestCount() != 4 {
		t.Fatalf("add after 5030 and 4290: %d requests, %v", fake.requestCount(), err)
	}
	codes = []int{CodeInternalError, CodeOK}
	if _, err := client.UpdateEndpoint(ctx, 7, EndpointChanges{}); err != nil || fake.requestCount() != 6 {
		t.Fatalf("update after 5000: %d requests, %v", fake.requestCount(), err)
	}
}

// Every call of the atMostOnce set, by the method that sends it: refused with 5000, it is sent once.
func TestEveryAtMostOnceCallIsSentOnceAfterA5000(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	calls := map[string]func(c *Client) error{
		endpointsAddPath: func(c *Client) error {
			_, err := c.AddEndpoint(ctx, NewEndpoint{URL: "https://a.example/push"})
			return err
		},
		endpointsRemovePath: func(c *Client) error { _, err := c.RemoveEndpoint(ctx, 7); return err },
		endpointsCheckPath: func(c *Client) error {
			_, err := c.CheckReceiver(ctx, "https://a.example/push")
			return err
		},
		deliveriesReplayPath: func(c *Client) error { _, err := c.ReplayDelivery(ctx, 17); return err },
		keyRotatePath:        func(c *Client) error { _, err := c.RotateKey(ctx); return err },
	}
	for path := range atMostOnce {
		call, ok := calls[path]
		if !ok {
			t.Fatalf("no call of this test sends %s", path)
		}
		fake, client := newFakePlatform(t)
		fake.sealed = func(string, map[string]interface{}) (int, interface{}) { return CodeInternalError, nil }
		if err := call(client); !errors.Is(err, &Error{Code: CodeInternalError}) || fake.requestCount() != 1 {
			t.Errorf("%s after 5000: %d requests, %v", path, fake.requestCount(), err)
		}
	}
}

func TestChangingCallIsNotRepeatedAfterATimeout(t *testing.T) {
	fake, client := newFakePlatform(t)
	client.timeout = 200 * time.Millisecond
	fake.sealed = func(string, map[string]interface{}) (int, interface{}) { return 0, nil }
	_, err := client.RotateKey(testContext(t, 10*time.Second))
	var netErr *NetworkError
	if !errors.As(err, &netErr) || fake.requestCount() != 1 || client.KeyVersion() != 1 {
		t.Fatalf("%d requests, keyVersion %d: %v", fake.requestCount(), client.KeyVersion(), err)
	}
}

// Nothing listening: the connection was never made, so even a changing call is tried again.
func TestChangingCallIsRetriedWhenNoConnectionWasMade(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.sealed = func(string, map[string]interface{}) (int, interface{}) { return CodeOK, nil }
	ctx := testContext(t, 20*time.Second)
	if _, err := client.Token(ctx); err != nil {
		t.Fatal(err)
	}
	client.baseURL = "http://127.0.0.1:1"
	client.maxAttempts = 2
	dials := 0
	client.http = &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		dials++
		return http.DefaultTransport.RoundTrip(req)
	})}
	_, err := client.AddEndpoint(ctx, NewEndpoint{URL: "https://a.example/push"})
	var netErr *NetworkError
	if !errors.As(err, &netErr) || dials != 2 {
		t.Fatalf("%d attempts: %v", dials, err)
	}
}

// The check waits for the receiver's callbacks: its attempt outlasts the client's Timeout.
func TestCheckReceiverOutlastsTheClientTimeout(t *testing.T) {
	fake, client := newFakePlatform(t)
	client.timeout = 100 * time.Millisecond
	fake.sealed = func(path string, p map[string]interface{}) (int, interface{}) {
		time.Sleep(400 * time.Millisecond)
		return CodeOK, map[string]interface{}{"url": p["url"], "enterpriseId": 42, "keyVersion": 1, "passed": false,
			"items": []interface{}{map[string]interface{}{"id": "callbacks", "severity": "failure", "passed": false,
				"expected": "a receipt callback", "evidence": "none within 60 s"}}}
	}
	report, err := client.CheckReceiver(testContext(t, 10*time.Second), "http://127.0.0.1:9/push")
	if err != nil || report.Passed || len(report.Items) != 1 || report.Items[0].ID != "callbacks" || report.URL != "http://127.0.0.1:9/push" {
		t.Fatalf("%+v %v", report, err)
	}
}
