package earshot

import (
	"encoding/base64"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

var (
	contentRangeForm = regexp.MustCompile(`^bytes (\d{1,15})-(\d{1,15})/(\d{1,15})$`)
	strongETagForm   = regexp.MustCompile(`^"[\x21\x23-\x7e]*"$`)
	sha256Member     = regexp.MustCompile(`(?i)^\s*sha-256\s*=\s*:([^:]*):\s*$`)
)

// contentRangeOf reads `Content-Range: bytes N-M/TOTAL` of a 206; ok is false when absent or of another form.
func contentRangeOf(h http.Header) (start, total int64, ok bool) {
	m := contentRangeForm.FindStringSubmatch(strings.TrimSpace(h.Get("Content-Range")))
	if m == nil {
		return 0, 0, false
	}
	start, _ = strconv.ParseInt(m[1], 10, 64)
	end, _ := strconv.ParseInt(m[2], 10, 64)
	total, _ = strconv.ParseInt(m[3], 10, 64)
	return start, total, start <= end && end < total
}

// strongETagOf is a strong ETag, the only kind If-Range may carry; "" for none or a weak one.
func strongETagOf(h http.Header) string {
	etag := strings.TrimSpace(h.Get("ETag"))
	if strongETagForm.MatchString(etag) {
		return etag
	}
	return ""
}

// contentTypeOf is the media type without its parameters; application/octet-stream when unstated.
func contentTypeOf(h http.Header) string {
	if media, _, err := mime.ParseMediaType(h.Get("Content-Type")); err == nil && media != "" {
		return media
	}
	return "application/octet-stream"
}

// reprDigestOf is the SHA-256 of the whole file that Repr-Digest (RFC 9530) states, on a 206 as on a
// 200; nil when it states none. A sha-256 that is not 32 bytes of Base64 is refused, never ignored.
func reprDigestOf(resp *http.Response) ([]byte, error) {
	for _, member := range strings.Split(resp.Header.Get("Repr-Digest"), ",") {
		m := sha256Member.FindStringSubmatch(member)
		if m == nil {
			continue
		}
		digest, err := base64.StdEncoding.Strict().DecodeString(m[1])
		if err != nil || len(digest) != 32 {
			return nil, &ResponseError{HTTPStatus: resp.StatusCode,
				Msg: "the audio link's Repr-Digest states a malformed sha-256: " + m[1]}
		}
		return digest, nil
	}
	return nil, nil
}
