package earshot

import (
	"context"
	"encoding/json"
	"time"
)

type tokenFetch struct {
	done  chan struct{}
	token string
	err   error
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

// fetchToken runs the shared token request, bounded by the attempts' own timeouts only. A token
// asked for with a key that RotateKey replaced meanwhile is handed out but not kept.
func (c *Client) fetchToken(fetch *tokenFetch) {
	requestedAt := c.now()
	keyVersion := c.KeyVersion()
	token, expiresIn, err := c.requestToken(context.Background())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetching = nil
	fetch.token, fetch.err = token, err
	if err == nil && c.keyVersion == keyVersion {
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
	data, err := c.withRetries(ctx, callOptions{}, func(ctx context.Context) (json.RawMessage, error) {
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

// dropToken forgets a refused token, unless another caller already replaced it.
func (c *Client) dropToken(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == token {
		c.token = ""
	}
}
