package earshot

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// ListDeliveries returns one page of the enterprise's push deliveries matching the filter, each with
// its attempts (time, duration, HTTP status, the first 4 KiB of the answer). Follow NextCursor for the
// next page, or use EachDeliveryPage.
func (c *Client) ListDeliveries(ctx context.Context, filter DeliveryFilter) (*DeliveryPage, error) {
	plaintext, err := deliveryFilterPlaintext(filter)
	if err != nil {
		return nil, err
	}
	page := &DeliveryPage{}
	if err := c.sealedCall(ctx, deliveriesListPath, plaintext, page); err != nil {
		return nil, err
	}
	if page.Items == nil || (page.HasMore && page.NextCursor == "") {
		return nil, &ResponseError{HTTPStatus: 200, Msg: "the deliveries answer is not a page {items, nextCursor, hasMore}"}
	}
	return page, nil
}

// EachDeliveryPage calls fn with every page of the deliveries matching the filter, from
// filter.Cursor on, following NextCursor while HasMore. An error from fn stops it and is returned.
func (c *Client) EachDeliveryPage(ctx context.Context, filter DeliveryFilter, fn func(*DeliveryPage) error) error {
	for {
		page, err := c.ListDeliveries(ctx, filter)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if !page.HasMore {
			return nil
		}
		filter.Cursor = page.NextCursor
	}
}

// ReplayDelivery pushes one delivery again (same eventId: the receiver dedups it) and returns how
// many deliveries were put back to be pushed. Another enterprise's deliveryId is refused with 4040.
func (c *Client) ReplayDelivery(ctx context.Context, deliveryID int64) (int64, error) {
	if deliveryID < 1 || deliveryID > maxEnterpriseID {
		return 0, localRefusal("deliveryId", "must be a delivery's id, an integer from 1 to 2^53-1")
	}
	return c.replay(ctx, map[string]interface{}{"deliveryId": deliveryID})
}

// ReplaySince pushes again every delivery in one of states (DeliveryFailed, DeliveryUnconfirmed…)
// created at or after since, and returns how many were put back to be pushed.
func (c *Client) ReplaySince(ctx context.Context, states []string, since time.Time) (int64, error) {
	if len(states) == 0 {
		return 0, localRefusal("states", "must be a non-empty list of delivery states, e.g. failed, unconfirmed")
	}
	if err := checkYear("since", since); err != nil {
		return 0, err
	}
	if since.IsZero() {
		return 0, localRefusal("since", "must be set: the deliveries created at or after it are replayed")
	}
	return c.replay(ctx, map[string]interface{}{"states": states, "since": formatInstant(since)})
}

func (c *Client) replay(ctx context.Context, plaintext map[string]interface{}) (int64, error) {
	var answer replayAnswer
	if err := c.sealedCall(ctx, deliveriesReplayPath, plaintext, &answer); err != nil {
		return 0, err
	}
	replayed, ok := answer.count()
	if !ok {
		return 0, &ResponseError{HTTPStatus: 200, Msg: "the replay's answer is not {replayed}"}
	}
	return replayed, nil
}

// Levels returns the enterprise's delivery service levels over the last 24 hours (LevelsLastDay)
// or 7 days (LevelsLastWeek). The figures may lag by a few seconds.
func (c *Client) Levels(ctx context.Context, window string) (*Levels, error) {
	if window != LevelsLastDay && window != LevelsLastWeek {
		return nil, localRefusal("window", `must be "24h" or "7d"`)
	}
	levels := &Levels{}
	if err := c.sealedCall(ctx, levelsPath, map[string]string{"window": window}, levels); err != nil {
		return nil, err
	}
	if share := levels.FirstAttemptAckShare; (share != nil && (*share < 0 || *share > 1)) || levels.Backlog < 0 {
		return nil, &ResponseError{HTTPStatus: 200, Msg: "the levels answer is out of range (ack share 0..1, backlog ≥ 0)"}
	}
	return levels, nil
}

// deliveryFilterPlaintext checks a filter as the platform would (4001 naming the field) and writes it.
func deliveryFilterPlaintext(f DeliveryFilter) (map[string]interface{}, error) {
	plaintext := map[string]interface{}{}
	for name, value := range map[string]string{"state": f.State, "eventType": f.EventType, "audioId": f.AudioID} {
		if value == "" {
			continue
		}
		if utf8.RuneCountInString(value) > 128 || strings.ContainsRune(value, 0) {
			return nil, localRefusal(name, "must be 1 to 128 characters, without U+0000")
		}
		plaintext[name] = value
	}
	for name, value := range map[string]time.Time{"since": f.Since, "until": f.Until} {
		if err := checkYear(name, value); err != nil {
			return nil, err
		}
		if !value.IsZero() {
			plaintext[name] = formatInstant(value)
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Since.After(f.Until) {
		return nil, localRefusal("since", "must not be after until")
	}
	if f.Cursor != "" {
		plaintext["cursor"] = f.Cursor
	}
	if f.Size < 0 || f.Size > MaxPageSize {
		return nil, localRefusal("size", "must be an integer from 1 to 100")
	} else if f.Size > 0 {
		plaintext["size"] = f.Size
	}
	return plaintext, nil
}

func checkYear(name string, t time.Time) error {
	if !t.IsZero() && (t.Year() < 1 || t.Year() > 9999) {
		return localRefusal(name, "must be a time from year 1 to 9999")
	}
	return nil
}
