package earshot

import (
	"context"
	"errors"
	"fmt"
	"net/url"
)

// DownloadOptions are the settings of one DownloadAudio; the zero value is fine.
type DownloadOptions struct {
	// OnProgress is called after each chunk written, with the bytes of the file on disk so far (an
	// earlier call's included) and its size (-1 until the link states it).
	OnProgress func(bytes, total int64)
}

// DownloadedAudio is what DownloadAudio wrote.
type DownloadedAudio struct {
	Bytes int64
	// SHA256 is the file's SHA-256, 64 lower-case hex digits.
	SHA256 string
	// ContentType is the link's Content-Type without parameters (application/octet-stream when unstated).
	ContentType string
	// Resumed counts the answers that went on from bytes already had (an earlier call's .part included).
	Resumed int
	// Verified: the SHA-256 was checked against the link's Repr-Digest; false for a link stating none.
	Verified bool
}

// NoAudioError is a recording without an audio part (no denoiseUrl).
type NoAudioError struct{ AudioID string }

func (e *NoAudioError) Error() string {
	return fmt.Sprintf("earshot: recording %s has no audio part (no denoiseUrl)", e.AudioID)
}

// DigestMismatchError is a download whose bytes are not the file the link stated (Repr-Digest): the
// .part file was removed. Expected and Actual are SHA-256 in lower-case hex.
type DigestMismatchError struct{ Expected, Actual string }

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("earshot: the downloaded audio's SHA-256 is %s, but the link stated %s", e.Actual, e.Expected)
}

// DownloadAudio downloads the recording's audio (its denoiseUrl, as a query answers it now) to path.
// The bytes go to path+".part", hashed on the way; a cut connection or a stall (no byte for the
// client's Timeout) is resumed with Range and If-Range, retried with the client's backoff; a link
// refused with 403 (expired) is replaced by a fresh one from a new query. Once complete, the file is
// checked against the link's Repr-Digest (a mismatch is a *DigestMismatchError and removes the .part),
// synced to disk and renamed to path.
//
// A done ctx returns ctx.Err() and leaves the .part file (and its ETag, path+".part.etag") for the
// next DownloadAudio to the same path to resume. A recording gone (deleted, or its audio replaced) is
// an *Error 4040 and removes the .part; a recording without audio is a *NoAudioError.
func (c *Client) DownloadAudio(ctx context.Context, audioID, path string, opts DownloadOptions) (*DownloadedAudio, error) {
	freshLink := func(ctx context.Context) (string, error) { return c.audioLink(ctx, audioID) }
	return c.downloadLink(ctx, freshLink, path, opts)
}

// audioLink is the recording's denoiseUrl as the query answers it now.
func (c *Client) audioLink(ctx context.Context, audioID string) (string, error) {
	page, err := c.QueryAudios(ctx, Filter{AudioID: audioID})
	if err != nil {
		return "", err
	}
	for _, item := range page.Items {
		if item.AudioID != audioID {
			continue
		}
		if item.Data.DenoiseURL == "" {
			return "", &NoAudioError{AudioID: audioID}
		}
		return item.Data.DenoiseURL, nil
	}
	return "", &Error{Code: CodeNotFound,
		Msg: "the query has no recording " + audioID + " (deleted, or not of your enterprise)"}
}

// downloadLink downloads freshLink's link to path (see DownloadAudio).
func (c *Client) downloadLink(ctx context.Context, freshLink func(context.Context) (string, error),
	path string, opts DownloadOptions) (*DownloadedAudio, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	partPath := path + ".part"
	t := &transfer{freshLink: checkedLink(freshLink), progress: opts.OnProgress, mayRenewLink: true, total: -1}
	link, err := t.freshLink(ctx)
	if err != nil {
		return nil, removeWhenGone(err, partPath)
	}
	t.link = link
	if t.part, err = openPart(partPath); err != nil {
		return nil, err
	}
	if err := c.transferWithRetries(ctx, t); err != nil {
		t.part.close()
		return nil, removeWhenGone(err, partPath)
	}
	return t.finish(path)
}

// removeWhenGone removes the partial file when err says the audio will never come.
func removeWhenGone(err error, partPath string) error {
	var noAudio *NoAudioError
	if errors.Is(err, &Error{Code: CodeNotFound}) || errors.As(err, &noAudio) {
		removePart(partPath)
	}
	return err
}

func checkedLink(freshLink func(context.Context) (string, error)) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		link, err := freshLink(ctx)
		if err != nil {
			return "", err
		}
		if u, err := url.Parse(link); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", &ResponseError{HTTPStatus: 200, Msg: "the audio link is not an http(s) URL"}
		}
		return link, nil
	}
}

// transferWithRetries runs attempts until the file is complete, a failure no retry can mend, or
// MaxAttempts attempts in a row brought no byte.
func (c *Client) transferWithRetries(ctx context.Context, t *transfer) error {
	failures := 0
	for {
		had := t.part.have
		err := c.downloadAttempt(ctx, t)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !transientDownload(err) {
			return err
		}
		if t.part.have > had {
			failures = 0
		}
		if failures++; failures >= c.maxAttempts {
			return err
		}
		if err := sleep(ctx, retryDelay(failures, err)); err != nil {
			return err
		}
	}
}

// transientDownload: a failure another attempt may not meet; any 5xx of a link too, as storage
// other than Earshot's answers them.
func transientDownload(err error) bool {
	var respErr *ResponseError
	return retryable(err, false) || (errors.As(err, &respErr) && respErr.HTTPStatus >= 500)
}
