package earshot

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

const (
	tokenPath    = "/openapi/v1/token"
	audiosPath   = "/openapi/v1/audios"
	changesPath  = "/openapi/v1/audios/changes"
	callbackPath = "/openapi/v1/callback"

	// The partner's self-service: its endpoints, deliveries, service levels, key and portal.
	endpointsListPath    = "/openapi/v1/endpoints/list"
	endpointsAddPath     = "/openapi/v1/endpoints/add"
	endpointsUpdatePath  = "/openapi/v1/endpoints/update"
	endpointsRemovePath  = "/openapi/v1/endpoints/remove"
	endpointsCheckPath   = "/openapi/v1/endpoints/check"
	deliveriesListPath   = "/openapi/v1/deliveries/list"
	deliveriesReplayPath = "/openapi/v1/deliveries/replay"
	levelsPath           = "/openapi/v1/levels"
	keyRotatePath        = "/openapi/v1/key/rotate"
	portalLinkPath       = "/openapi/v1/portal/link"

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

// Client calls the partner API: tokens, the query, the change feed, the receipt callback and the
// partner's self-service (endpoints, deliveries, levels, key rotation, portal links). Every request
// is sealed afresh (retries included), transient failures are retried with backoff, and the token is
// reused until 5 minutes before it expires. Safe for concurrent use.
type Client struct {
	baseURL      string
	enterpriseID int64
	http         *http.Client
	timeout      time.Duration
	maxAttempts  int
	now          func() time.Time

	mu sync.Mutex
	// keyVersion and key seal requests; RotateKey replaces them. keys holds every key the client
	// sealed with, by version, to open answers to requests sealed before a rotation.
	keyVersion int
	key        *Key
	keys       map[int]*Key
	token      string
	renewAt    time.Time
	fetching   *tokenFetch
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
		keys:         map[int]*Key{cfg.KeyVersion: key},
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

// KeyVersion is the keyVersion the client seals with: Config.KeyVersion, or the one RotateKey
// switched to.
func (c *Client) KeyVersion() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keyVersion
}

// currentKey is the keyVersion and key to seal with now.
func (c *Client) currentKey() (int, *Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keyVersion, c.key
}

// knownKey is the key of a keyVersion the client sealed with, or nil.
func (c *Client) knownKey(keyVersion int) *Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys[keyVersion]
}

// useKey makes a new key the one to seal with, and drops the token issued for the old one so that
// the next token is the new key's.
func (c *Client) useKey(keyVersion int, key *Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keyVersion, c.key, c.keys[keyVersion] = keyVersion, key, key
	c.token = ""
}
