package earshot

import (
	"encoding/json"
	"time"
)

// The states of a push delivery, as the self-service calls show and filter them.
const (
	DeliveryPending     = "pending"
	DeliveryInFlight    = "in_flight"
	DeliveryHeld        = "held"
	DeliveryQueued      = "queued"
	DeliveryAcked       = "acked"
	DeliveryConfirmed   = "confirmed"
	DeliveryFailed      = "failed"
	DeliveryUnconfirmed = "unconfirmed"
	DeliveryCancelled   = "cancelled"
)

// The windows of Levels.
const (
	LevelsLastDay  = "24h"
	LevelsLastWeek = "7d"
)

// The access of a portal link: a view session only reads endpoints, deliveries and levels.
const (
	PortalView   = "view"
	PortalManage = "manage"
)

// Endpoint is one of the enterprise's push endpoints.
type Endpoint struct {
	EndpointID   int64  `json:"endpointId"`
	EnterpriseID int64  `json:"enterpriseId"`
	URL          string `json:"url"`
	// EventTypes are the event types pushed to it, by their full names (EventAudioReady…).
	EventTypes  []string `json:"eventTypes"`
	Description string   `json:"description"`
	// Enabled false holds its deliveries until it is enabled again.
	Enabled bool `json:"enabled"`
	// MaxPerSecond is the most deliveries a second to it; nil: no limit.
	MaxPerSecond *int           `json:"maxPerSecond"`
	CreatedAt    time.Time      `json:"createdAt"`
	Health       EndpointHealth `json:"health"`
	// Waiting counts its deliveries pending, held, or queued behind an earlier event of their recording.
	Waiting int64 `json:"waiting"`
}

// EndpointHealth is the health of an endpoint's URL, shared by every endpoint with that URL.
type EndpointHealth struct {
	// State is "healthy", "failing" or "disabled".
	State string `json:"state"`
	// Reason says why it is disabled, or what is failing; "" when healthy.
	Reason        string     `json:"reason"`
	LastSuccessAt *time.Time `json:"lastSuccessAt"`
	LastFailureAt *time.Time `json:"lastFailureAt"`
}

// NewEndpoint is an endpoint to add. Only URL is required.
type NewEndpoint struct {
	URL string
	// EventTypes to push to it (full or short names); nil: every event type.
	EventTypes  []string
	Description string
	// MaxPerSecond: deliveries a second at most; 0: no limit.
	MaxPerSecond int
}

// EndpointChanges are the changes of an endpoint; a nil field stays as it is.
type EndpointChanges struct {
	URL         *string
	EventTypes  []string
	Description *string
	// MaxPerSecond: the new limit; a pointer to 0 removes the limit.
	MaxPerSecond *int
	// Enabled false holds its deliveries; true lets them go again.
	Enabled *bool
}

// RemovedEndpoint is the answer to RemoveEndpoint.
type RemovedEndpoint struct {
	EndpointID int64 `json:"endpointId"`
	// Cancelled counts its deliveries not yet confirmed, now cancelled.
	Cancelled int64 `json:"cancelled"`
}

// CheckReport is the receiver check's verdict on a URL.
type CheckReport struct {
	URL          string `json:"url"`
	EnterpriseID int64  `json:"enterpriseId"`
	// KeyVersion is the key that sealed the check's pushes: the enterprise's current one.
	KeyVersion int `json:"keyVersion"`
	// Passed: every item of severity "failure" passed (warnings aside).
	Passed bool        `json:"passed"`
	Items  []CheckItem `json:"items"`
}

// CheckItem is one item of a receiver check: what a receiver following the protocol does, and what
// came back.
type CheckItem struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Passed   bool   `json:"passed"`
	Expected string `json:"expected"`
	Evidence string `json:"evidence"`
}

// DeliveryFilter selects deliveries; every field is optional.
type DeliveryFilter struct {
	// State is one of the Delivery… states.
	State     string
	EventType string
	AudioID   string
	// Since (inclusive) and Until (exclusive) bound the deliveries' creation.
	Since time.Time
	Until time.Time
	// Cursor is a page's NextCursor: the page after it ("" for the first).
	Cursor string
	// Size from 1 to 100 (0: 20).
	Size int
}

// DeliveryPage is one page of deliveries.
type DeliveryPage struct {
	Items []Delivery `json:"items"`
	// NextCursor is opaque: send it back as DeliveryFilter.Cursor. "" when HasMore is false.
	NextCursor string `json:"nextCursor"`
	HasMore    bool   `json:"hasMore"`
}

// Delivery is one push of an event to an endpoint, with every attempt.
type Delivery struct {
	DeliveryID int64 `json:"deliveryId"`
	// EndpointID is 0 for a delivery made before the enterprise had endpoints.
	EndpointID int64     `json:"endpointId"`
	EventID    string    `json:"eventId"`
	EventType  string    `json:"eventType"`
	AudioID    string    `json:"audioId"`
	State      string    `json:"state"`
	CreatedAt  time.Time `json:"createdAt"`
	Attempts   []Attempt `json:"attempts"`
}

// Attempt is one attempt of a delivery.
type Attempt struct {
	StartedAt  time.Time `json:"startedAt"`
	DurationMs int64     `json:"durationMs"`
	// HTTPStatus is nil when no answer came.
	HTTPStatus *int `json:"httpStatus"`
	// Answer is the first 4 KiB of the receiver's answer body; nil when none came.
	Answer *string `json:"answer"`
}

// Levels are the enterprise's delivery service levels over a window. A figure is nil when the
// window has no data for it.
type Levels struct {
	// FirstAttemptP50Ms and FirstAttemptP95Ms: from a delivery's creation to its first attempt's start.
	FirstAttemptP50Ms *float64 `json:"firstAttemptP50Ms"`
	FirstAttemptP95Ms *float64 `json:"firstAttemptP95Ms"`
	// FirstAttemptAckShare is the share (0 to 1) of deliveries acknowledged at their first attempt.
	FirstAttemptAckShare *float64 `json:"firstAttemptAckShare"`
	// AckToReceiptP95Ms: from the acknowledgement to the receipt callback.
	AckToReceiptP95Ms *float64 `json:"ackToReceiptP95Ms"`
	// Backlog counts the deliveries pending, held, queued or in flight now.
	Backlog int64 `json:"backlog"`
}

// RotatedKey is the enterprise's new key. Store Secret now: it is shown once. The old key stays
// valid for the platform's grace period.
type RotatedKey struct {
	KeyVersion int    `json:"keyVersion"`
	Secret     string `json:"secret"`
}

// PortalLink is a one-time link into the partner portal.
type PortalLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// replayAnswer reads {replayed}: a count, or true/false for one delivery.
type replayAnswer struct {
	Replayed json.RawMessage `json:"replayed"`
}

func (a replayAnswer) count() (int64, bool) {
	switch string(a.Replayed) {
	case "true":
		return 1, true
	case "false":
		return 0, true
	}
	n, ok := jsonInteger(a.Replayed)
	return n, ok && n >= 0
}
