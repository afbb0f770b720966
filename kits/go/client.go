package earshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mathrand "math/rand"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

const (
	tokenPath    = "/openapi/v1/token"
	audiosPath   = "/openapi/v1/audios"
	changesPath  = "/openapi/v1/audios/changes"
	callbackPath = "/openapi/v1/callback"

	defaultTimeout     = 10 * time.Second
	defaultMaxAttempts = 4
	// A cached token is renewed this long before it expires (or at half its life when shorter).
	renewBefore = 5 * time.Minute
	// A 4290 asking for a longer wait than this is not retried: the caller decides.
	maxRetryAfter = 60 * time.Second
	// Query pages are under 16 MiB sealed.
	maxAnswerBytes  = 32 << 20
	maxEnterpriseID = 1<<53 - 1
)

// Config holds a partner's credentials and the client's settings.
type Config struct {
	// BaseURL is where the partner API is, e.g. https://api.example.com.
	BaseURL      string
	EnterpriseID int64
	KeyVersion   int
	// Secret is the enterprise's secret (44 characters of Base64, or 32 UTF-8 bytes).
	Secret string
	// HTTPClient sends the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
	// Timeout bounds one HTTP attempt; 10 s when 0.
	Timeout time.Duration
	// MaxAttempts is how often a request is tried when it fails in a way a later attempt may not
	// (no connection, a timeout, 5000, 5030, a short 4290); 4 when 0, 1 for no retry.
	MaxAttempts int
}

// ConfigFromEnv reads EARSHOT_BASE_URL, EARSHOT_ENTERPRISE_ID, EARSHOT_KEY_VERSION and
// EARSHOT_SECRET, the variables the Node kit's tools read.
func ConfigFromEnv() (Config, error) {
	enterpriseID, err := strconv.ParseInt(os.Getenv("EARSHOT_ENTERPRISE_ID"), 10, 64)
	if err != nil {
		return Config{}, fmt.Errorf("earshot: EARSHOT_ENTERPRISE_ID must be an integer: %w", err)
	}
	keyVersion, err := strconv.Atoi(os.Getenv("EARSHOT_KEY_VERSION"))
	if err != nil {
		return Config{}, fmt.Errorf("earshot: EARSHOT_KEY_VERSION must be an integer: %w", err)
	}
	return Config{
		BaseURL:      os.Getenv("EARSHOT_BASE_URL"),
		EnterpriseID: enterpriseID,
		KeyVersion:   keyVersion,
		Secret:       os.Getenv("EARSHOT_SECRET"),
	}, nil
}

// Client calls the partner API: tokens, the query, the change feed and the receipt callback. Every
// request is sealed afresh (retries included), transient failures are retried with backoff, and the
// token is reused until 5 minutes before it expires. Safe for concurrent use.
type Client struct {
	baseURL      string
	enterpriseID int64
	keyVersion   int
	key          *Key
	http         *http.Client
	timeout      time.Duration
	maxAttempts  int
	now          func() time.Time

	mu       sync.Mutex
	token    string
	renewAt  time.Time
	fetching *tokenFetch
}

type tokenFetch struct {
	done  chan struct{}
	token string
	err   error
}

// NewClient checks the configuration and returns a client; nothing is sent until a call needs it.
func NewClient(cfg Config) (*Client, error) {
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("earshot: BaseURL must be an http:// or https:// URL; got %q", cfg.BaseURL)
	}
	if cfg.EnterpriseID < 1 || cfg.EnterpriseID > maxEnterpriseID {
		return nil, fmt.Errorf("earshot: EnterpriseID must be from 1 to 2^53-1; got %d", cfg.EnterpriseID)
	}
	if cfg.KeyVersion < 1 || cfg.KeyVersion > MaxKeyVersion {
		return nil, fmt.Errorf("earshot: KeyVersion must be from 1 to 2^31-1; got %d", cfg.KeyVersion)
	}
	key, err := LoadKey(cfg.Secret)
	if err != nil {
		return nil, fmt.Errorf("earshot: Secret: %w", err)
	}
	if cfg.Timeout < 0 || cfg.MaxAttempts < 0 {
		return nil, errors.New("earshot: Timeout and MaxAttempts must not be negative")
	}
	c := &Client{
		baseURL:      strings.TrimRight(cfg.BaseURL, "/"),
		enterpriseID: cfg.EnterpriseID,
		keyVersion:   cfg.KeyVersion,
		key:          key,
		http:         cfg.HTTPClient,
		timeout:      cfg.Timeout,
		maxAttempts:  cfg.MaxAttempts,
		now:          time.Now,
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.timeout == 0 {
		c.timeout = defaultTimeout
	}
	if c.maxAttempts == 0 {
		c.maxAttempts = defaultMaxAttempts
	}
	return c, nil
}

// Token returns a bearer token: the cached one while it is fresh, else a new one. Goroutines asking
// at once share one token request; one giving up (its ctx done) does not fail the others.
func (c *Client) Token(ctx context.Context) (string, error) {
	c.mu.Lock()
	if c.token != "" && c.now().Before(c.renewAt) {
		token := c.token
		c.mu.Unlock()
		return token, nil
	}
	fetch := c.fetching
	if fetch == nil {
		fetch = &tokenFetch{done: make(chan struct{})}
		c.fetching = fetch
		go c.fetchToken(fetch)
	}
	c.mu.Unlock()
	select {
	case <-fetch.done:
		return fetch.token, fetch.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// fetchToken runs the shared token request, bounded by the attempts' own timeouts only.
func (c *Client) fetchToken(fetch *tokenFetch) {
	requestedAt := c.now()
	token, expiresIn, err := c.requestToken(context.Background())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetching = nil
	fetch.token, fetch.err = token, err
	if err == nil {
		life := time.Duration(expiresIn) * time.Second
		early := renewBefore
		if life/2 < early {
			early = life / 2
		}
		c.token, c.renewAt = token, requestedAt.Add(life-early)
	}
	close(fetch.done)
}

func (c *Client) requestToken(ctx context.Context) (string, int64, error) {
	eventID := newEventID()
	data, err := c.withRetries(ctx, func(ctx context.Context) (json.RawMessage, error) {
		env, err := c.seal(eventID, struct{}{})
		if err != nil {
			return nil, err
		}
		body := struct {
			*Envelope
			EnterpriseID int64 `json:"enterpriseId"`
		}{env, c.enterpriseID}
		return c.post(ctx, tokenPath, body, "")
	})
	if err != nil {
		return "", 0, err
	}
	var answer struct {
		AccessToken string `json:"accessToken"`
		ExpiresIn   int64  `json:"expiresIn"`
		TokenType   string `json:"tokenType"`
	}
	if json.Unmarshal(data, &answer) != nil || answer.AccessToken == "" || answer.ExpiresIn < 1 ||
		answer.TokenType != "Bearer" {
		return "", 0, &ResponseError{HTTPStatus: 200, Msg: "the token answer is not {accessToken, expiresIn, tokenType}"}
	}
	return answer.AccessToken, answer.ExpiresIn, nil
}

// QueryAudios returns one page of the recordings matching the filter, newest first. The filter is
// checked before anything is sent (a refusal is an *Error with code 4001).
func (c *Client) QueryAudios(ctx context.Context, filter Filter) (*AudioPage, error) {
	plaintext, err := filterPlaintext(filter)
	if err != nil {
		return nil, err
	}
	page := &AudioPage{}
	if err := c.sealedCall(ctx, audiosPath, plaintext, page); err != nil {
		return nil, err
	}
	if page.SpecVersion != SpecVersion || page.Page < 1 || page.Size < 1 {
		return nil, &ResponseError{HTTPStatus: 200, Msg: "the query answer is not a page of recordings"}
	}
	return page, nil
}

// EachAudioPage calls fn with every page of the recordings matching the filter, from filter.Page
// on, until all of them were seen. An error from fn stops it and is returned.
func (c *Client) EachAudioPage(ctx context.Context, filter Filter, fn func(*AudioPage) error) error {
	if filter.Page == 0 {
		filter.Page = 1
	}
	for {
		page, err := c.QueryAudios(ctx, filter)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if len(page.Items) == 0 || page.Page*page.Size >= page.Total {
			return nil
		}
		filter.Page = page.Page + 1
	}
}

// Changes returns one page of the change feed after cursor ("" for the first change), at most size
// changes (0: 100).
func (c *Client) Changes(ctx context.Context, cursor string, size int) (*ChangePage, error) {
	plaintext := map[string]interface{}{}
	if cursor != "" {
		plaintext["cursor"] = cursor
	}
	if size < 0 || size > MaxPageSize {
		return nil, localRefusal("size", "must be an integer from 1 to 100")
	} else if size > 0 {
		plaintext["size"] = size
	}
	page := &ChangePage{}
	if err := c.sealedCall(ctx, changesPath, plaintext, page); err != nil {
		return nil, err
	}
	if page.SpecVersion != SpecVersion || page.NextCursor == "" {
		return nil, &ResponseError{HTTPStatus: 200, Msg: "the change feed answer is not a page of changes"}
	}
	return page, nil
}

// EachChangePage calls fn with every page of the change feed from cursor, following NextCursor
// until HasMore is false: the last page's NextCursor is where later changes will start. Apply a page
// and store its NextCursor in one transaction. An error from fn stops it and is returned.
func (c *Client) EachChangePage(ctx context.Context, cursor string, size int, fn func(*ChangePage) error) error {
	for {
		page, err := c.Changes(ctx, cursor, size)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if !page.HasMore {
			return nil
		}
		cursor = page.NextCursor
	}
}

// ConfirmReceipt is the receipt callback: it tells the platform the pushed recording audioID is
// stored. Idempotent. The Receiver's outbox calls it for you, after each answer.
func (c *Client) ConfirmReceipt(ctx context.Context, audioID string) error {
	if audioID == "" || utf8.RuneCountInString(audioID) > 128 || strings.ContainsRune(audioID, 0) {
		return localRefusal("audioId", "must be 1 to 128 characters, without U+0000")
	}
	_, err := c.authorized(ctx, callbackPath, newEventID(), map[string]string{"audioId": audioID})
	return err
}

// sealedCall makes a bearer request whose answer data is an envelope, and decodes its plaintext.
func (c *Client) sealedCall(ctx context.Context, path string, plaintext interface{}, into interface{}) error {
	eventID := newEventID()
	data, err := c.authorized(ctx, path, eventID, plaintext)
	if err != nil {
		return err
	}
	env, opened, err := c.key.Open(data)
	if err != nil {
		return &ResponseError{HTTPStatus: 200, Msg: "the answer's data cannot be opened: " + err.Error()}
	}
	if env.EventID != eventID || env.KeyVersion != c.keyVersion {
		return &ResponseError{HTTPStatus: 200, Msg: "the answer's data answers another request (eventId or keyVersion)"}
	}
	if err := json.Unmarshal(opened, into); err != nil {
		return &ResponseError{HTTPStatus: 200, Msg: "the answer's data cannot be read: " + err.Error()}
	}
	return nil
}

// seal seals the plaintext now, with issuedAt (seconds since the Unix epoch): replayed past the
// platform's max age, the request is refused.
func (c *Client) seal(eventID string, plaintext interface{}) (*Envelope, error) {
	text, err := json.Marshal(plaintext)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPlaintext, err)
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(text, &fields); err != nil {
		return nil, fmt.Errorf("%w: the plaintext must be a JSON object", ErrInvalidPlaintext)
	}
	fields["issuedAt"] = json.RawMessage(strconv.FormatInt(c.now().Unix(), 10))
	return c.key.Seal(c.keyVersion, eventID, fields)
}

// authorized sends a bearer request; refused with 4010 or 4011, it is sent once more with a new token.
func (c *Client) authorized(ctx context.Context, path, eventID string, plaintext interface{}) (json.RawMessage, error) {
	send := func(token string) (json.RawMessage, error) {
		return c.withRetries(ctx, func(ctx context.Context) (json.RawMessage, error) {
			env, err := c.seal(eventID, plaintext)
			if err != nil {
				return nil, err
			}
			return c.post(ctx, path, env, token)
		})
	}
	token, err := c.Token(ctx)
	if err != nil {
		return nil, err
	}
	data, err := send(token)
	var apiErr *Error
	if !errors.As(err, &apiErr) || (apiErr.Code != CodeUnauthorized && apiErr.Code != CodeTokenExpired) {
		return data, err
	}
	c.dropToken(token)
	if token, err = c.Token(ctx); err != nil {
		return nil, err
	}
	return send(token)
}

// dropToken forgets a refused token, unless another caller already replaced it.
func (c *Client) dropToken(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == token {
		c.token = ""
	}
}

// withRetries runs attempt until it succeeds, fails for good, or MaxAttempts ran out.
func (c *Client) withRetries(ctx context.Context, attempt func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	for n := 1; ; n++ {
		data, err := c.attempt(ctx, attempt)
		if err == nil || ctx.Err() != nil || n >= c.maxAttempts || !retryable(err) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return data, err
		}
		if err := sleep(ctx, retryDelay(n, err)); err != nil {
			return nil, err
		}
	}
}

func (c *Client) attempt(ctx context.Context, attempt func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return attempt(ctx)
}

// retryable: a failure a later attempt may not meet.
func retryable(err error) bool {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		switch apiErr.Code {
		case CodeRateLimited:
			return apiErr.RetryAfter <= maxRetryAfter
		case CodeInternalError, CodeUnavailable:
			return true
		}
		return false
	}
	var respErr *ResponseError
	if errors.As(err, &respErr) {
		return respErr.HTTPStatus == 502 || respErr.HTTPStatus == 503 || respErr.HTTPStatus == 504
	}
	var netErr *NetworkError
	return errors.As(err, &netErr)
}

// retryDelay: Retry-After when the platform asked for it, else 250 ms doubling to 5 s, jittered.
func retryDelay(failures int, err error) time.Duration {
	var apiErr *Error
	if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		return apiErr.RetryAfter
	}
	base := 250 * time.Millisecond * time.Duration(math.Pow(2, float64(failures-1)))
	if base > 5*time.Second {
		base = 5 * time.Second
	}
	return base + time.Duration(mathrand.Int63n(int64(base)))
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// post sends one attempt and returns the answer's data, or the refusal it carries.
func (c *Client) post(ctx context.Context, path string, body interface{}, token string) (json.RawMessage, error) {
	text, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	target := c.baseURL + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(text))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &NetworkError{URL: c.baseURL, Err: err}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, &NetworkError{URL: c.baseURL, Err: err}
	}
	return readAnswer(resp, answer)
}

// readAnswer turns an answer into its data, or the *Error it carries.
func readAnswer(resp *http.Response, text []byte) (json.RawMessage, error) {
	var body struct {
		Code      *json.Number    `json:"code"`
		Msg       string          `json:"msg"`
		RequestID string          `json:"requestId"`
		Data      json.RawMessage `json:"data"`
	}
	if json.Unmarshal(text, &body) != nil || body.Code == nil {
		return nil, &ResponseError{HTTPStatus: resp.StatusCode, Msg: "no Earshot JSON body ({code, msg, requestId})"}
	}
	code, err := body.Code.Int64()
	if err != nil {
		return nil, &ResponseError{HTTPStatus: resp.StatusCode, Msg: "the answer's code is not an integer"}
	}
	if code == CodeOK {
		return body.Data, nil
	}
	apiErr := &Error{Code: int(code), Msg: body.Msg, RequestID: body.RequestID, HTTPStatus: resp.StatusCode}
	if apiErr.RequestID == "" {
		apiErr.RequestID = resp.Header.Get("X-Request-Id")
	}
	if seconds, err := strconv.ParseUint(strings.TrimSpace(resp.Header.Get("Retry-After")), 10, 32); err == nil {
		apiErr.RetryAfter = time.Duration(seconds) * time.Second
	}
	return nil, apiErr
}

// newEventID is a random UUID (v4): eventIds trace requests.
func newEventID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
