package earshot

import (
	"errors"
	"fmt"
	"time"
)

// Answer codes of the protocol's catalogue. The HTTP status of an answer is its code / 10.
const (
	CodeOK                   = 2000
	CodeInvalidRequest       = 4000
	CodeInvalidParameter     = 4001
	CodeUnauthorized         = 4010
	CodeTokenExpired         = 4011
	CodeDecryptionFailed     = 4012
	CodeForbidden            = 4030
	CodeForbiddenByRole      = 4031 // the admin API's; never answered to a partner
	CodeNotFound             = 4040
	CodeRequestTimeout       = 4080
	CodeReplayed             = 4090
	CodePayloadTooLarge      = 4130
	CodeURITooLong           = 4140
	CodeUnsupportedMediaType = 4150
	CodeRateLimited          = 4290
	CodeInternalError        = 5000
	CodeUnavailable          = 5030
)

var codeNames = map[int]string{
	CodeOK:                   "OK",
	CodeInvalidRequest:       "INVALID_REQUEST",
	CodeInvalidParameter:     "INVALID_PARAMETER",
	CodeUnauthorized:         "UNAUTHORIZED",
	CodeTokenExpired:         "TOKEN_EXPIRED",
	CodeDecryptionFailed:     "DECRYPTION_FAILED",
	CodeForbidden:            "FORBIDDEN",
	CodeForbiddenByRole:      "FORBIDDEN_BY_ROLE",
	CodeNotFound:             "NOT_FOUND",
	CodeRequestTimeout:       "REQUEST_TIMEOUT",
	CodeReplayed:             "REPLAYED",
	CodePayloadTooLarge:      "PAYLOAD_TOO_LARGE",
	CodeURITooLong:           "URI_TOO_LONG",
	CodeUnsupportedMediaType: "UNSUPPORTED_MEDIA_TYPE",
	CodeRateLimited:          "RATE_LIMITED",
	CodeInternalError:        "INTERNAL_ERROR",
	CodeUnavailable:          "UNAVAILABLE",
}

// CodeName is the catalogue name of an answer code ("NOT_FOUND" for 4040), or "" for a code the
// catalogue does not have.
func CodeName(code int) string { return codeNames[code] }

// Error is a refusal answered by the platform with a catalogue code other than 2000, or a request
// refused by the kit before it was sent (Code 4001, no RequestID, HTTPStatus 0).
//
// Match a code with errors.As, or with errors.Is against an *Error holding only that code:
//
//	var apiErr *earshot.Error
//	if errors.As(err, &apiErr) && apiErr.Code == earshot.CodeNotFound { … }
//	if errors.Is(err, &earshot.Error{Code: earshot.CodeNotFound}) { … }
type Error struct {
	Code      int
	Msg       string
	RequestID string
	// HTTPStatus of the answer; 0 when the request was refused before it was sent.
	HTTPStatus int
	// RetryAfter is the Retry-After header of a 4290 or 5030, when sent.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	text := fmt.Sprintf("earshot: %d", e.Code)
	if name := CodeName(e.Code); name != "" {
		text += " " + name
	}
	text += ": " + e.Msg
	if e.RequestID != "" {
		text += " (requestId " + e.RequestID + ")"
	}
	return text
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// NetworkError is a request that got no complete answer: no connection, a cut connection, or no
// answer within the attempt's timeout.
type NetworkError struct {
	URL string
	Err error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("earshot: cannot reach the platform at %s: %v", e.URL, e.Err)
}

func (e *NetworkError) Unwrap() error { return e.Err }

// ResponseError is an answer that is not the protocol's: not a JSON body with a code, or data that
// cannot be opened or read. A gateway's 502, 503 or 504 is one, and is retried.
type ResponseError struct {
	HTTPStatus int
	Msg        string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("earshot: unexpected answer (HTTP %d): %s", e.HTTPStatus, e.Msg)
}

// Why an envelope does not open, as the protocol tells them apart. Errors returned by Open and
// Seal wrap one of these: test them with errors.Is.
var (
	// ErrInvalidEnvelope: a field missing or of the wrong type, a fixed value wrong, Base64 not
	// canonical, a nonce or tag of the wrong length (answered 4000).
	ErrInvalidEnvelope = errors.New("invalid envelope")
	// ErrDecryptionFailed: wrong secret, unknown keyVersion, tampered bytes (answered 4012).
	ErrDecryptionFailed = errors.New("the envelope could not be decrypted")
	// ErrInvalidPlaintext: authentic, but not UTF-8 JSON holding an object (answered 4000).
	ErrInvalidPlaintext = errors.New("invalid plaintext")
	// ErrInvalidSecret: a secret in neither of the two accepted forms.
	ErrInvalidSecret = errors.New("invalid secret")
)

// envelopeCode is the answer code of an error from Open.
func envelopeCode(err error) int {
	if errors.Is(err, ErrDecryptionFailed) {
		return CodeDecryptionFailed
	}
	return CodeInvalidRequest
}
