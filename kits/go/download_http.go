package earshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// transfer is one download across its attempts.
type transfer struct {
	link      string
	freshLink func(context.Context) (string, error)
	// A 403 is answered with a fresh link: once, and again only after bytes arrived.
	mayRenewLink bool
	part         *partFile
	progress     func(bytes, total int64)
	total        int64 // -1 until the link states it
	digest       []byte
	contentType  string
	resumed      int
}

// downloadAttempt is one request, and its body appended to the part file.
func (c *Client) downloadAttempt(ctx context.Context, t *transfer) error {
	w := startWatchdog(ctx, c.timeout)
	defer w.stop()
	resp, err := c.openMedia(w, t)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return t.receive(w, resp)
}

// openMedia requests what is missing until an answer has bytes to append: the whole file when the
// link cannot go on from the bytes had, with a fresh link when it is refused with 403.
func (c *Client) openMedia(w *watchdog, t *transfer) (*http.Response, error) {
	for {
		w.touch()
		resp, err := c.http.Do(t.request(w.ctx))
		if err != nil {
			return nil, w.failure(t.link, err)
		}
		switch {
		case resp.StatusCode == http.StatusOK || (resp.StatusCode == http.StatusPartialContent && t.continues(resp)):
			if err := t.accept(resp); err != nil {
				resp.Body.Close()
				return nil, err
			}
			return resp, nil
		case (resp.StatusCode == http.StatusPartialContent || resp.StatusCode == http.StatusRequestedRangeNotSatisfiable) && t.part.have > 0:
			resp.Body.Close()
			if err := t.part.restart(); err != nil {
				return nil, err
			}
			continue
		}
		refusal := refusalOf(resp)
		if resp.StatusCode != http.StatusForbidden || !t.mayRenewLink {
			return nil, refusal
		}
		// The query has its own timeouts and retries: no stall of the link.
		w.timer.Stop()
		if t.link, err = t.freshLink(w.parent); err != nil {
			return nil, err
		}
		t.mayRenewLink = false
	}
}

func (t *transfer) request(ctx context.Context) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.link, nil)
	// Decoded content would not match the ranges and the digest, which are of the stored bytes.
	req.Header.Set("Accept-Encoding", "identity")
	if t.part.have > 0 && t.part.etag != "" {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", t.part.have))
		req.Header.Set("If-Range", t.part.etag)
	}
	return req
}

// continues: a 206 goes on exactly from the bytes had, of the same file.
func (t *transfer) continues(resp *http.Response) bool {
	start, _, ok := contentRangeOf(resp.Header)
	etag := strongETagOf(resp.Header)
	return ok && start == t.part.have && (etag == "" || etag == t.part.etag)
}

// accept takes the answer's description of the file; a whole file (200) replaces the bytes had.
func (t *transfer) accept(resp *http.Response) error {
	partial := resp.StatusCode == http.StatusPartialContent
	if !partial {
		if err := t.part.restart(); err != nil {
			return err
		}
	} else if t.part.have > 0 {
		t.resumed++
	}
	if etag := strongETagOf(resp.Header); t.part.etag == "" && etag != "" {
		if err := t.part.keepETag(etag); err != nil {
			return err
		}
	}
	t.total = resp.ContentLength
	if partial {
		_, t.total, _ = contentRangeOf(resp.Header)
	}
	digest, err := reprDigestOf(resp)
	if err != nil {
		return err
	}
	if digest != nil || !partial {
		t.digest = digest
	}
	t.contentType = contentTypeOf(resp.Header)
	return nil
}

// receive appends the answer's body to the part file.
func (t *transfer) receive(w *watchdog, resp *http.Response) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.touch()
			if err := t.part.append(buf[:n]); err != nil {
				return err
			}
			t.mayRenewLink = true
			if t.progress != nil {
				t.progress(t.part.have, t.total)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return w.failure(t.link, err)
		}
	}
	if t.total >= 0 && t.part.have != t.total {
		return &NetworkError{URL: origin(t.link),
			Err: fmt.Errorf("the audio link's answer ended after %d of %d bytes", t.part.have, t.total)}
	}
	return nil
}

// refusalOf is the refusal a non-2xx answer carries: an *Error for an Earshot body, else a
// *ResponseError; a plain 404 is the *Error 4040 an Earshot link would answer.
func refusalOf(resp *http.Response) error {
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, err := readAnswer(resp, text)
	var respErr *ResponseError
	if err == nil || (errors.As(err, &respErr) && resp.StatusCode == http.StatusNotFound) {
		if resp.StatusCode == http.StatusNotFound {
			return &Error{Code: CodeNotFound, Msg: "the audio link answered HTTP 404", HTTPStatus: 404}
		}
		return &ResponseError{HTTPStatus: resp.StatusCode, Msg: "the audio link answered HTTP " + resp.Status}
	}
	return err
}

// origin is the link without its path: the path of an Earshot link is its credential.
func origin(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return "the audio link"
	}
	return u.Scheme + "://" + u.Host
}

// watchdog is one attempt's context: the caller's, ended too when no byte came for idle.
type watchdog struct {
	ctx      context.Context
	parent   context.Context
	cancel   context.CancelFunc
	timer    *time.Timer
	idle     time.Duration
	timedOut atomic.Bool
}

func startWatchdog(parent context.Context, idle time.Duration) *watchdog {
	w := &watchdog{parent: parent, idle: idle}
	w.ctx, w.cancel = context.WithCancel(parent)
	w.timer = time.AfterFunc(idle, func() { w.timedOut.Store(true); w.cancel() })
	return w
}

func (w *watchdog) touch() { w.timer.Reset(w.idle) }

func (w *watchdog) stop() { w.timer.Stop(); w.cancel() }

// failure is what a failed request or read is reported as.
func (w *watchdog) failure(link string, err error) error {
	if w.parent.Err() != nil {
		return w.parent.Err()
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // without the link, whose path is a credential
	}
	if w.timedOut.Load() {
		err = fmt.Errorf("no byte for %s: %w", w.idle, err)
	}
	return &NetworkError{URL: origin(link), Err: err}
}
