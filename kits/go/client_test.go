package earshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testSecret = "wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0="

// fakePlatform answers the token, the callback and the sealed routes as a script says, and checks
// that no nonce is ever sent twice.
type fakePlatform struct {
	t *testing.T
	// keys open requests by keyVersion; a sealed answer is sealed with its request's.
	keys   map[int]*Key
	mu     sync.Mutex
	nonces map[string]bool
	tokens int
	// tokenKeyVersions is the keyVersion of each token request.
	tokenKeyVersions []int
	expiresIn        int
	// callback answers the n-th callback (from 1) sent with token: a code, or 0 to hang.
	callback  func(n int, token string) int
	callbacks int
	// callbackPlaintexts are the callbacks' plaintexts, in the order they arrived.
	callbackPlaintexts []map[string]interface{}
	// issuedAt is each request's plaintext issuedAt, in the order they arrived (nil when it had none).
	issuedAt []interface{}
	// sealed answers any other path: a code, and the data to seal when it is 2000 (0 to hang).
	sealed func(path string, plaintext map[string]interface{}) (int, interface{})
	// requests are the other paths' requests, in the order they arrived.
	requests []fakeRequest
}

// fakeRequest is one request to a sealed route: its path, keyVersion, token and plaintext.
type fakeRequest struct {
	path       string
	keyVersion int
	token      string
	plaintext  map[string]interface{}
}

func newFakePlatform(t *testing.T) (*fakePlatform, *Client) {
	key, _ := LoadKey(testSecret)
	fake := &fakePlatform{t: t, keys: map[int]*Key{1: key}, nonces: map[string]bool{}, expiresIn: 7200}
	server := httptest.NewServer(fake)
	t.Cleanup(server.Close)
	client, err := NewClient(Config{BaseURL: server.URL, EnterpriseID: 42, KeyVersion: 1, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	return fake, client
}

func (f *fakePlatform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	env, plaintext, err := OpenEnvelope(body, func(version int) *Key { return f.keys[version] })
	f.mu.Unlock()
	if err != nil {
		f.answer(w, CodeDecryptionFailed, nil)
		return
	}
	var fields map[string]interface{}
	_ = json.Unmarshal(plaintext, &fields)
	f.mu.Lock()
	f.issuedAt = append(f.issuedAt, fields["issuedAt"])
	replayed := f.nonces[env.Nonce]
	f.nonces[env.Nonce] = true
	f.mu.Unlock()
	if replayed {
		f.t.Errorf("nonce %s sent twice", env.Nonce)
		f.answer(w, CodeReplayed, nil)
		return
	}
	switch r.URL.Path {
	case tokenPath:
		f.mu.Lock()
		f.tokenKeyVersions = append(f.tokenKeyVersions, env.KeyVersion)
		f.tokens++
		token := fmt.Sprintf("token-%d", f.tokens)
		f.mu.Unlock()
		f.answer(w, CodeOK, map[string]interface{}{"accessToken": token, "expiresIn": f.expiresIn, "tokenType": "Bearer"})
	case callbackPath:
		f.mu.Lock()
		f.callbacks++
		n := f.callbacks
		f.callbackPlaintexts = append(f.callbackPlaintexts, fields)
		f.mu.Unlock()
		code := f.callback(n, r.Header.Get("Authorization")[len("Bearer "):])
		if code == 0 {
			<-r.Context().Done()
			return
		}
		f.answer(w, code, nil)
	default:
		f.answerSealed(w, r, env, fields)
	}
}

func (f *fakePlatform) answerSealed(w http.ResponseWriter, r *http.Request, env *Envelope, fields map[string]interface{}) {
	f.mu.Lock()
	f.requests = append(f.requests, fakeRequest{r.URL.Path, env.KeyVersion, r.Header.Get("Authorization"), fields})
	key := f.keys[env.KeyVersion]
	f.mu.Unlock()
	code, data := f.sealed(r.URL.Path, fields)
	if code == 0 {
		<-r.Context().Done()
		return
	}
	if code != CodeOK {
		f.answer(w, code, nil)
		return
	}
	sealed, err := key.Seal(env.KeyVersion, env.EventID, data)
	if err != nil {
		f.t.Errorf("sealing the answer to %s: %v", r.URL.Path, err)
		f.answer(w, CodeInternalError, nil)
		return
	}
	f.answer(w, CodeOK, sealed)
}

func (f *fakePlatform) answer(w http.ResponseWriter, code int, data interface{}) {
	w.Header().Set("Content-Type", "application/json")
	if code == CodeRateLimited {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(code / 10)
	_ = json.NewEncoder(w).Encode(map[string]interface{}{"code": code, "msg": CodeName(code), "requestId": "req-1", "data": data})
}

func TestExpiredTokenIsDroppedAndTheRequestSentOnceMore(t *testing.T) {
	fake, client := newFakePlatform(t)
	var used []string
	fake.callback = func(n int, token string) int {
		used = append(used, token)
		if n == 1 {
			return CodeTokenExpired
		}
		return CodeOK
	}
	if err := client.ConfirmReceipt(testContext(t, 10*time.Second), "aud_1"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(used) != "[token-1 token-2]" {
		t.Fatalf("tokens used: %v", used)
	}
}

func TestEveryRequestCarriesIssuedAtFromTheClientsClock(t *testing.T) {
	fake, client := newFakePlatform(t)
	now := time.Date(2026, 11, 1, 0, 0, 0, 900_000_000, time.UTC)
	client.now = func() time.Time { return now }
	fake.callback = func(n int, token string) int { return CodeOK }
	ctx := testContext(t, 10*time.Second)
	if err := client.ConfirmReceipt(ctx, "aud_1"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(7 * time.Second)
	if err := client.ConfirmReceipt(ctx, "aud_2"); err != nil {
		t.Fatal(err)
	}
	// JSON numbers decode as float64: the token request, then the two callbacks.
	want := fmt.Sprint([]interface{}{1793491200.0, 1793491200.0, 1793491207.0})
	if got := fmt.Sprint(fake.issuedAt); got != want {
		t.Fatalf("issuedAt sent: %s, want %s", got, want)
	}
}

func TestAnErasureConfirmationIsTheCallbackWithErasedTrue(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.callback = func(int, string) int { return CodeOK }
	ctx := testContext(t, 10*time.Second)
	if err := client.ConfirmReceipt(ctx, "aud_1"); err != nil {
		t.Fatal(err)
	}
	if err := client.ConfirmErasure(ctx, "aud_2"); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, fields := range fake.callbackPlaintexts {
		delete(fields, "issuedAt")
		encoded, _ := json.Marshal(fields)
		sent = append(sent, string(encoded))
	}
	if want := `[{"audioId":"aud_1"} {"audioId":"aud_2","erased":true}]`; fmt.Sprint(sent) != want {
		t.Fatalf("callbacks sent: %v, want %s", sent, want)
	}
	if err := client.ConfirmErasure(ctx, ""); err == nil || len(fake.callbackPlaintexts) != 2 {
		t.Fatalf("an empty audioId: %v", err)
	}
}

func TestTokenRefusedTwiceIsReturned(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.callback = func(int, string) int { return CodeUnauthorized }
	err := client.ConfirmReceipt(testContext(t, 10*time.Second), "aud_1")
	if !errors.Is(err, &Error{Code: CodeUnauthorized}) || fake.callbacks != 2 {
		t.Fatalf("%d callbacks: %v", fake.callbacks, err)
	}
}

func TestTransientRefusalsAreRetriedSealedAfresh(t *testing.T) {
	fake, client := newFakePlatform(t)
	codes := []int{CodeUnavailable, CodeInternalError, CodeRateLimited, CodeOK}
	fake.callback = func(n int, _ string) int { return codes[n-1] }
	if err := client.ConfirmReceipt(testContext(t, 20*time.Second), "aud_1"); err != nil || fake.callbacks != 4 {
		t.Fatalf("%d callbacks: %v", fake.callbacks, err)
	}
}

func TestPermanentRefusalIsNotRetried(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.callback = func(int, string) int { return CodeNotFound }
	err := client.ConfirmReceipt(testContext(t, 10*time.Second), "aud_1")
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Code != CodeNotFound || apiErr.RequestID != "req-1" || fake.callbacks != 1 {
		t.Fatalf("%d callbacks: %#v", fake.callbacks, err)
	}
}

func TestContextEndsAHangingRequest(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.callback = func(int, string) int { return 0 }
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	started := time.Now()
	err := client.ConfirmReceipt(ctx, "aud_1")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(started) > 5*time.Second {
		t.Fatalf("after %v: %v", time.Since(started), err)
	}
}

func TestTokenIsRenewedFiveMinutesBeforeItExpires(t *testing.T) {
	fake, client := newFakePlatform(t)
	fake.expiresIn = 3600
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	client.now = func() time.Time { return now }
	ctx := testContext(t, 10*time.Second)
	first, _ := client.Token(ctx)
	now = now.Add(54 * time.Minute)
	if same, _ := client.Token(ctx); same != first {
		t.Fatalf("renewed at 54 min: %s", same)
	}
	now = now.Add(time.Minute)
	if renewed, _ := client.Token(ctx); renewed == first || fake.tokens != 2 {
		t.Fatalf("not renewed at 55 min: %s (%d tokens)", renewed, fake.tokens)
	}
}

func TestConfigIsChecked(t *testing.T) {
	for name, cfg := range map[string]Config{
		"base URL":   {BaseURL: "ftp://x", EnterpriseID: 1, KeyVersion: 1, Secret: testSecret},
		"enterprise": {BaseURL: "http://x", EnterpriseID: 0, KeyVersion: 1, Secret: testSecret},
		"keyVersion": {BaseURL: "http://x", EnterpriseID: 1, KeyVersion: 0, Secret: testSecret},
		"secret":     {BaseURL: "http://x", EnterpriseID: 1, KeyVersion: 1, Secret: "short"},
	} {
		if _, err := NewClient(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Nothing listening: the client retries, then answers a NetworkError.
func TestUnreachableIsANetworkErrorAfterRetries(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	var attempts int32
	client, _ := NewClient(Config{
		BaseURL: "http://127.0.0.1:1", EnterpriseID: 1, KeyVersion: 1,
		Secret: "0123456789abcdefghijklmnopqrstuv", MaxAttempts: 2,
		HTTPClient: &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			atomic.AddInt32(&attempts, 1)
			return http.DefaultTransport.RoundTrip(req)
		})},
	})
	_, err := client.Token(ctx)
	var netErr *NetworkError
	if !errors.As(err, &netErr) || atomic.LoadInt32(&attempts) != 2 {
		t.Fatalf("%d attempts: %v", attempts, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
