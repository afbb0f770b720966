package earshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

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
	return c.callback(ctx, audioID, false)
}

// ConfirmErasure is the erasure confirmation: the receipt callback with erased: true, telling the
// platform the partner removed the deleted recording audioID, its audio included, from its store.
// Idempotent. The Receiver's outbox calls it for you, after the answer to the recording.deleted push.
func (c *Client) ConfirmErasure(ctx context.Context, audioID string) error {
	return c.callback(ctx, audioID, true)
}

func (c *Client) callback(ctx context.Context, audioID string, erased bool) error {
	if audioID == "" || utf8.RuneCountInString(audioID) > 128 || strings.ContainsRune(audioID, 0) {
		return localRefusal("audioId", "must be 1 to 128 characters, without U+0000")
	}
	plaintext := map[string]interface{}{"audioId": audioID}
	if erased {
		plaintext["erased"] = true
	}
	_, err := c.authorized(ctx, callOptions{}, callbackPath, newEventID(), plaintext)
	return err
}

// sealedCall makes a bearer request whose answer data is an envelope, and decodes its plaintext.
func (c *Client) sealedCall(ctx context.Context, path string, plaintext interface{}, into interface{}) error {
	return c.sealedCallWith(ctx, callOptions{}, path, plaintext, into)
}

// atMostOnce holds the paths of the calls a second copy of would act twice (an endpoint added or
// removed twice, a check run twice, deliveries replayed twice, a key rotated twice; a resend is sealed
// with a fresh nonce, so the platform's replay guard does not stop it): the operations the contract
// marks atMostOnce. They are retried only after a refusal that did nothing (a short 4290, 5030) or a
// connection never made, never after a timeout, a cut answer, 5000 or a gateway's 502-504.
var atMostOnce = map[string]bool{
	endpointsAddPath:     true,
	endpointsRemovePath:  true,
	endpointsCheckPath:   true,
	deliveriesReplayPath: true,
	keyRotatePath:        true,
}

// callOptions changes how one call is sent; the zero value is the client's settings.
type callOptions struct {
	// timeout bounds one attempt; the client's Timeout when 0.
	timeout time.Duration
	// atMostOnce: set by authorized for a path in atMostOnce.
	atMostOnce bool
}

func (c *Client) sealedCallWith(ctx context.Context, opts callOptions, path string, plaintext interface{}, into interface{}) error {
	eventID := newEventID()
	data, err := c.authorized(ctx, opts, path, eventID, plaintext)
	if err != nil {
		return err
	}
	// Opened with the key of its keyVersion: an answer to a request sealed before a rotation is
	// sealed with the key before it.
	env, opened, err := OpenEnvelope(data, c.knownKey)
	if err != nil {
		return &ResponseError{HTTPStatus: 200, Msg: "the answer's data cannot be opened: " + err.Error()}
	}
	if env.EventID != eventID {
		return &ResponseError{HTTPStatus: 200, Msg: "the answer's data answers another request (eventId)"}
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
	keyVersion, key := c.currentKey()
	return key.Seal(keyVersion, eventID, fields)
}

// authorized sends a bearer request; refused with 4010 or 4011, it is sent once more with a new token.
func (c *Client) authorized(ctx context.Context, opts callOptions, path, eventID string, plaintext interface{}) (json.RawMessage, error) {
	opts.atMostOnce = atMostOnce[path]
	send := func(token string) (json.RawMessage, error) {
		return c.withRetries(ctx, opts, func(ctx context.Context) (json.RawMessage, error) {
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
