package earshot

import (
	"context"
	"net/url"
	"time"
)

const (
	maxEndpointURL = 2048
	urlRule        = "must be an absolute http:// or https:// URL of at most 2048 characters"
	// A receiver check waits up to a minute for each receipt callback after its pushes' answers.
	checkTimeout = 3 * time.Minute
)

// ListEndpoints returns the enterprise's push endpoints, in the order they were added, each with
// its URL's health.
func (c *Client) ListEndpoints(ctx context.Context) ([]Endpoint, error) {
	var answer struct {
		Items []Endpoint `json:"items"`
	}
	if err := c.sealedCall(ctx, endpointsListPath, struct{}{}, &answer); err != nil {
		return nil, err
	}
	if answer.Items == nil {
		return nil, &ResponseError{HTTPStatus: 200, Msg: "the endpoints answer is not {items: [endpoint…]}"}
	}
	return answer.Items, nil
}

// AddEndpoint adds a push endpoint and returns it. It is not retried once it may have reached the
// platform (a retry could add it twice): on a timeout, ListEndpoints tells whether it was added.
func (c *Client) AddEndpoint(ctx context.Context, endpoint NewEndpoint) (*Endpoint, error) {
	if err := checkEndpointURL(endpoint.URL); err != nil {
		return nil, err
	}
	plaintext := map[string]interface{}{"url": endpoint.URL}
	if endpoint.EventTypes != nil {
		if len(endpoint.EventTypes) == 0 {
			return nil, localRefusal("eventTypes", "must be a non-empty list of event types (nil: every one)")
		}
		plaintext["eventTypes"] = endpoint.EventTypes
	}
	if endpoint.Description != "" {
		plaintext["description"] = endpoint.Description
	}
	if endpoint.MaxPerSecond < 0 {
		return nil, localRefusal("maxPerSecond", "must be a positive integer, or 0 for no limit")
	} else if endpoint.MaxPerSecond > 0 {
		plaintext["maxPerSecond"] = endpoint.MaxPerSecond
	}
	return c.endpointCall(ctx, endpointsAddPath, plaintext)
}

// UpdateEndpoint changes the fields of changes that are set, and returns the endpoint as it is now.
// Another enterprise's endpointId is refused with 4040, as an unknown one.
func (c *Client) UpdateEndpoint(ctx context.Context, endpointID int64, changes EndpointChanges) (*Endpoint, error) {
	plaintext, err := endpointIDPlaintext(endpointID)
	if err != nil {
		return nil, err
	}
	if changes.URL != nil {
		if err := checkEndpointURL(*changes.URL); err != nil {
			return nil, err
		}
		plaintext["url"] = *changes.URL
	}
	if changes.EventTypes != nil {
		if len(changes.EventTypes) == 0 {
			return nil, localRefusal("eventTypes", "must be a non-empty list of event types (nil: unchanged)")
		}
		plaintext["eventTypes"] = changes.EventTypes
	}
	if changes.Description != nil {
		plaintext["description"] = *changes.Description
	}
	if changes.MaxPerSecond != nil {
		switch limit := *changes.MaxPerSecond; {
		case limit < 0:
			return nil, localRefusal("maxPerSecond", "must be a positive integer, or 0 for no limit")
		case limit == 0:
			plaintext["maxPerSecond"] = nil
		default:
			plaintext["maxPerSecond"] = limit
		}
	}
	if changes.Enabled != nil {
		plaintext["enabled"] = *changes.Enabled
	}
	return c.endpointCall(ctx, endpointsUpdatePath, plaintext)
}

// RemoveEndpoint removes an endpoint; its deliveries not yet confirmed are cancelled. It is not
// retried once it may have reached the platform (a retry would answer 4040).
func (c *Client) RemoveEndpoint(ctx context.Context, endpointID int64) (*RemovedEndpoint, error) {
	plaintext, err := endpointIDPlaintext(endpointID)
	if err != nil {
		return nil, err
	}
	removed := &RemovedEndpoint{}
	if err := c.sealedCall(ctx, endpointsRemovePath, plaintext, removed); err != nil {
		return nil, err
	}
	if removed.EndpointID != endpointID {
		return nil, &ResponseError{HTTPStatus: 200, Msg: "the answer to the removal is not {endpointId, cancelled}"}
	}
	return removed, nil
}

// CheckReceiver runs the platform's receiver check against a URL (an endpoint's, or one to be):
// pushes sealed with the enterprise's current key and marked as the check's, then a report of each
// item. It answers once the receipt callbacks came or their time ran out (up to a minute), so one
// attempt may last 3 minutes (or Config.Timeout when longer); it is not retried after a timeout.
func (c *Client) CheckReceiver(ctx context.Context, receiverURL string) (*CheckReport, error) {
	if err := checkEndpointURL(receiverURL); err != nil {
		return nil, err
	}
	opts := callOptions{timeout: checkTimeout}
	if c.timeout > opts.timeout {
		opts.timeout = c.timeout
	}
	report := &CheckReport{}
	if err := c.sealedCallWith(ctx, opts, endpointsCheckPath, map[string]string{"url": receiverURL}, report); err != nil {
		return nil, err
	}
	if report.URL == "" || report.Items == nil {
		return nil, &ResponseError{HTTPStatus: 200, Msg: "the check's answer is not a report {url, passed, items}"}
	}
	return report, nil
}

func (c *Client) endpointCall(ctx context.Context, path string, plaintext interface{}) (*Endpoint, error) {
	endpoint := &Endpoint{}
	if err := c.sealedCall(ctx, path, plaintext, endpoint); err != nil {
		return nil, err
	}
	if endpoint.EndpointID < 1 || endpoint.URL == "" {
		return nil, &ResponseError{HTTPStatus: 200, Msg: "the answer is not an endpoint {endpointId, url, …}"}
	}
	return endpoint, nil
}

func endpointIDPlaintext(endpointID int64) (map[string]interface{}, error) {
	if endpointID < 1 || endpointID > maxEnterpriseID {
		return nil, localRefusal("endpointId", "must be an endpoint's id, an integer from 1 to 2^53-1")
	}
	return map[string]interface{}{"endpointId": endpointID}, nil
}

// checkEndpointURL refuses what cannot be a push URL; the platform's address policy decides the rest.
func checkEndpointURL(text string) error {
	parsed, err := url.Parse(text)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" ||
		utf16Length(text) > maxEndpointURL {
		return localRefusal("url", urlRule)
	}
	return nil
}
