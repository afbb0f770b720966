package earshot

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The event types of a push.
const (
	EventAudioReady      = "recording.audio_ready"
	EventTranscriptReady = "recording.transcript_ready"
	EventUpdated         = "recording.updated"
	EventDeleted         = "recording.deleted"
)

// eventTypes are the event types a push may carry, as the protocol lists them (contract_test.go holds
// them to its contract.json).
var eventTypes = []string{EventAudioReady, EventTranscriptReady, EventUpdated, EventDeleted}

// The kinds of change in the change feed.
const (
	ChangeCreated         = "created"
	ChangeTranscriptAdded = "transcript_added"
	ChangeUpdated         = "updated"
	ChangeDeleted         = "deleted"
)

// MaxPageSize is the most recordings (or changes) a page holds.
const MaxPageSize = 100

// RecordingData is a recording as the platform shows it: set B (audio form) while it has no
// transcript, set A (transcript form, TranscriptID set) once it has one. Fields the kit does not
// know are ignored here and kept in Raw.
type RecordingData struct {
	DeviceUID  string `json:"deviceUid"`
	Title      string `json:"title"`
	RecordedAt string `json:"recordedAt,omitempty"`
	// DenoiseURL and RecordDuration: the audio part, when the recording has one.
	DenoiseURL     string `json:"denoiseUrl,omitempty"`
	RecordDuration *int64 `json:"recordDuration,omitempty"`
	// The transcript part (set A only).
	TranscriptID        *int64 `json:"transcriptId,omitempty"`
	TranscriptText      string `json:"transcriptText,omitempty"`
	TranscriptSentences string `json:"transcriptSentences,omitempty"`
	DurationMs          *int64 `json:"durationMs,omitempty"`
	WordsCount          *int64 `json:"wordsCount,omitempty"`
	// Raw is the data exactly as received.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the known fields and keeps the whole object in Raw.
func (d *RecordingData) UnmarshalJSON(text []byte) error {
	type plain RecordingData
	if err := json.Unmarshal(text, (*plain)(d)); err != nil {
		return err
	}
	d.Raw = append(json.RawMessage(nil), text...)
	return nil
}

// HasTranscript tells set A (the transcript form) from set B.
func (d *RecordingData) HasTranscript() bool { return d.TranscriptID != nil }

// Sentence is one sentence of a transcript; times are integers (milliseconds in the demo data).
type Sentence struct {
	Text      string `json:"text"`
	BeginTime int64  `json:"beginTime"`
	EndTime   int64  `json:"endTime"`
}

// Sentences parses TranscriptSentences (a JSON array serialized into a string); nil without a
// transcript.
func (d *RecordingData) Sentences() ([]Sentence, error) {
	if !d.HasTranscript() {
		return nil, nil
	}
	return parseSentences(d.TranscriptSentences)
}

func parseSentences(serialized string) ([]Sentence, error) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(serialized), &items); err != nil || items == nil {
		return nil, fieldError("transcriptSentences", "must be a JSON array of {text: string, beginTime: integer, endTime: integer}")
	}
	sentences := make([]Sentence, len(items))
	for i, item := range items {
		text, okText := jsonString(item["text"])
		begin, okBegin := jsonInteger(item["beginTime"])
		end, okEnd := jsonInteger(item["endTime"])
		if !okText || !okBegin || !okEnd {
			return nil, fieldError(fmt.Sprintf("transcriptSentences[%d]", i), "must be {text: string, beginTime: integer, endTime: integer}")
		}
		sentences[i] = Sentence{Text: text, BeginTime: begin, EndTime: end}
	}
	return sentences, nil
}

// Filter selects recordings; every field is optional. A recording matches when
// StartTime <= recordedAt < EndTime. Times are sent at microsecond precision (truncated).
type Filter struct {
	AudioID   string
	DeviceUID string
	StartTime time.Time
	EndTime   time.Time
	// Page from 1 (0: the first); Size from 1 to 100 (0: 20).
	Page int
	Size int
}

// AudioPage is one page of recordings, newest first.
type AudioPage struct {
	SpecVersion string      `json:"specVersion"`
	Page        int         `json:"page"`
	Size        int         `json:"size"`
	Total       int         `json:"total"`
	Items       []AudioItem `json:"items"`
}

// AudioItem is one recording of a page.
type AudioItem struct {
	AudioID string        `json:"audioId"`
	Data    RecordingData `json:"data"`
}

// ChangePage is one page of the change feed.
type ChangePage struct {
	SpecVersion string   `json:"specVersion"`
	Items       []Change `json:"items"`
	// NextCursor is opaque: store it as answered and send it back.
	NextCursor string `json:"nextCursor"`
	// HasMore is true while more changes are ready now.
	HasMore    bool    `json:"hasMore"`
	LagSeconds float64 `json:"lagSeconds"`
}

// Change is one entry of the change feed. Data is the recording as it is now; nil for a deletion
// and for a recording deleted since (skip those: a deletion wins).
type Change struct {
	Seq     int64          `json:"seq"`
	AudioID string         `json:"audioId"`
	Change  string         `json:"change"`
	At      string         `json:"at"`
	Data    *RecordingData `json:"data,omitempty"`
}

// PushEvent is the plaintext of a push, checked.
type PushEvent struct {
	EventID    string
	EventType  string
	AudioID    string
	OccurredAt time.Time
	// Data is the recording as it is when the push was sent; empty for recording.deleted.
	Data RecordingData
	// Sentences is Data.TranscriptSentences parsed (set A only).
	Sentences []Sentence
	// Raw is the whole plaintext as received, unknown fields included.
	Raw json.RawMessage
}

// Deleted reports a recording.deleted push: delete your copy.
func (e *PushEvent) Deleted() bool { return e.EventType == EventDeleted }

// parameterError is a plaintext field breaking its rule (answered 4001).
type parameterError struct {
	field, rule string
}

func (e *parameterError) Error() string { return e.field + ": " + e.rule }

func fieldError(field, rule string) error { return &parameterError{field: field, rule: rule} }

// parsePushEvent checks a push's plaintext as the Node kit does: the head fields, the eventType,
// and the recording's data in set A or B; unknown fields anywhere are accepted.
func parsePushEvent(plaintext []byte, envelopeEventID string) (*PushEvent, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(plaintext, &fields); err != nil {
		return nil, fieldError("", "the event must be a JSON object")
	}
	event := &PushEvent{Raw: append(json.RawMessage(nil), plaintext...)}
	var ok bool
	if event.EventID, ok = jsonString(fields["eventId"]); !ok || event.EventID == "" ||
		utf8.RuneCountInString(event.EventID) > MaxEventIDLength {
		return nil, fieldError("eventId", "must be a string of 1 to 128 characters")
	}
	if event.EventID != envelopeEventID {
		return nil, fieldError("eventId", "must equal the envelope's eventId")
	}
	if event.AudioID, ok = jsonString(fields["audioId"]); !ok || event.AudioID == "" {
		return nil, fieldError("audioId", "must be a non-empty string")
	}
	for field, value := range map[string]string{"eventId": event.EventID, "audioId": event.AudioID} {
		if strings.ContainsRune(value, 0) {
			return nil, fieldError(field, "must not contain the character U+0000")
		}
	}
	occurredAt, _ := jsonString(fields["occurredAt"])
	if event.OccurredAt, ok = parseInstant(occurredAt); !ok {
		return nil, fieldError("occurredAt", instantRule)
	}
	event.EventType, _ = jsonString(fields["eventType"])
	switch event.EventType {
	case EventDeleted:
		if !isJSONObject(fields["data"]) {
			return nil, fieldError("data", "must be an object")
		}
		return event, nil
	case EventAudioReady, EventTranscriptReady, EventUpdated:
	default:
		return nil, fieldError("eventType", "must be one of "+strings.Join(eventTypes, ", "))
	}
	data, err := parseRecordingData(fields["data"])
	if err != nil {
		return nil, err
	}
	event.Data = *data
	if event.Sentences, err = data.Sentences(); err != nil {
		return nil, prefixField("data.", err)
	}
	return event, nil
}

func prefixField(prefix string, err error) error {
	if p, ok := err.(*parameterError); ok {
		return fieldError(prefix+p.field, p.rule)
	}
	return err
}

// parseRecordingData checks data against set A (when it has a transcriptId) or set B.
func parseRecordingData(raw json.RawMessage) (*RecordingData, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fieldError("data", "must be an object")
	}
	texts, counts, optional := []string{"deviceUid", "title", "denoiseUrl"}, []string{"recordDuration"}, []string{}
	if _, transcript := fields["transcriptId"]; transcript {
		texts = []string{"deviceUid", "title", "transcriptText", "transcriptSentences"}
		counts = []string{"durationMs", "wordsCount"}
		optional = []string{"denoiseUrl", "recordDuration"}
		if _, ok := jsonInteger(fields["transcriptId"]); !ok {
			return nil, fieldError("data.transcriptId", "must be an integer")
		}
	}
	for _, name := range texts {
		if _, ok := jsonString(fields[name]); !ok {
			return nil, fieldError("data."+name, "must be a string")
		}
	}
	for _, name := range counts {
		if n, ok := jsonInteger(fields[name]); !ok || n < 0 {
			return nil, fieldError("data."+name, "must be an integer ≥ 0")
		}
	}
	for _, name := range optional {
		if _, present := fields[name]; !present {
			continue
		}
		if name == "denoiseUrl" {
			if _, ok := jsonString(fields[name]); !ok {
				return nil, fieldError("data."+name, "must be a string")
			}
		} else if n, ok := jsonInteger(fields[name]); !ok || n < 0 {
			return nil, fieldError("data."+name, "must be an integer ≥ 0")
		}
	}
	data := &RecordingData{}
	if err := json.Unmarshal(raw, data); err != nil {
		return nil, fieldError("data", err.Error())
	}
	return data, nil
}

// jsonInteger reads a JSON number holding an integer that fits in int64.
func jsonInteger(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

const instantRule = "must be an ISO-8601 date-time with an explicit offset or Z and at most 6 fractional digits"

var instantPattern = regexp.MustCompile(
	`^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,6})?)?(?:Z|([+-])(\d{2}):(\d{2}))$`)

// parseInstant reads an instant as the protocol writes them, refusing days that do not exist.
func parseInstant(text string) (time.Time, bool) {
	m := instantPattern.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, false
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	y, mo, d, h, mi, s := n(m[1]), n(m[2]), n(m[3]), n(m[4]), n(m[5]), n(m[6])
	offsetHours, offsetMinutes := n(m[9]), n(m[10])
	if y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, time.Month(mo)) || h > 23 || mi > 59 || s > 59 ||
		offsetHours > 15 || offsetMinutes > 59 {
		return time.Time{}, false
	}
	nanos := 0
	if m[7] != "" {
		nanos = n((m[7][1:] + "000000000")[:9])
	}
	offset := offsetHours*3600 + offsetMinutes*60
	if m[8] == "-" {
		offset = -offset
	}
	return time.Date(y, time.Month(mo), d, h, mi, s, nanos, time.FixedZone("", offset)), true
}

func daysIn(year int, month time.Month) int {
	return time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// formatInstant writes a time as the platform reads it: an offset, at most 6 fractional digits.
func formatInstant(t time.Time) string {
	return t.Truncate(time.Microsecond).Format("2006-01-02T15:04:05.999999Z07:00")
}

// filterPlaintext checks a filter as the platform would (4001 naming the field) and writes it.
func filterPlaintext(f Filter) (map[string]interface{}, error) {
	plaintext := map[string]interface{}{}
	for name, value := range map[string]string{"audioId": f.AudioID, "deviceUid": f.DeviceUID} {
		if value == "" {
			continue
		}
		if utf8.RuneCountInString(value) > 128 || strings.ContainsRune(value, 0) {
			return nil, localRefusal(name, "must be 1 to 128 characters, without U+0000")
		}
		plaintext[name] = value
	}
	for name, value := range map[string]time.Time{"startTime": f.StartTime, "endTime": f.EndTime} {
		if value.IsZero() {
			continue
		}
		if value.Year() < 1 || value.Year() > 9999 {
			return nil, localRefusal(name, "must be a time from year 1 to 9999")
		}
		plaintext[name] = formatInstant(value)
	}
	if !f.StartTime.IsZero() && !f.EndTime.IsZero() && f.StartTime.After(f.EndTime) {
		return nil, localRefusal("startTime", "must not be after endTime")
	}
	if f.Page < 0 || f.Page > math.MaxInt32 {
		return nil, localRefusal("page", "must be an integer from 1 to 2147483647")
	} else if f.Page > 0 {
		plaintext["page"] = f.Page
	}
	if f.Size < 0 || f.Size > MaxPageSize {
		return nil, localRefusal("size", "must be an integer from 1 to 100")
	} else if f.Size > 0 {
		plaintext["size"] = f.Size
	}
	return plaintext, nil
}

// localRefusal is a request refused before it was sent, as the platform would refuse it.
func localRefusal(field, rule string) *Error {
	return &Error{Code: CodeInvalidParameter, Msg: field + ": " + rule}
}
