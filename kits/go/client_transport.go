package earshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	mathrand "math/rand"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// withRetries runs attempt until it succeeds, fails for good, or MaxAttempts ran out.
func (c *Client) withRetries(ctx context.Context, opts callOptions, attempt func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	timeout := opts.timeout
	if timeout == 0 {
		timeout = c.timeout
	}
	for n := 1; ; n++ {
		data, err := c.attempt(ctx, timeout, attempt)
		if err == nil || ctx.Err() != nil || n >= c.maxAttempts || !retryable(err, opts.atMostOnce) {
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

func (c *Client) attempt(ctx context.Context, timeout time.Duration, attempt func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return attempt(ctx)
}

// retryable: a failure a later attempt may not meet. For a call that must not act twice (atMostOnce),
// only a failure that surely changed nothing: a refusal before the work, no connection.
func retryable(err error, atMostOnce bool) bool {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		switch apiErr.Code {
		case CodeRateLimited:
			return apiErr.RetryAfter <= maxRetryAfter
		case CodeUnavailable:
			return true
		case CodeInternalError:
			return !atMostOnce
		}
		return false
	}
	if atMostOnce {
		var opErr *net.OpError
		return errors.As(err, &opErr) && opErr.Op == "dial"
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
