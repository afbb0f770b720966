package pgtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/earshot/earshot/kits/go/platformtests/platformtest"
	"github.com/lib/pq"
)

// transcribed is an import line: a recording of the device, with a transcript.
func transcribed(audioID, deviceUID, title, words string, transcriptID int) string {
	line, _ := json.Marshal(map[string]interface{}{
		"audioId": audioID, "deviceUid": deviceUID, "title": title, "recordedAt": "2026-11-02T09:00:00Z",
		"denoiseUrl": "https://cdn.example.com/" + audioID + ".mp3", "recordDuration": 61000,
		"transcript": map[string]interface{}{
			"transcriptId": transcriptID, "transcriptText": words, "durationMs": 1800, "wordsCount": 4,
			"sentences": []map[string]interface{}{{"text": words, "beginTime": 0, "endTime": 1800}},
		},
	})
	return string(line) + "\n"
}

// An operator erases a device: the README's receiver removes every erased recording's content from
// its rows (its outbox's too), keeps the other device's, and the erasure ends confirmed, with a
// signed report that verifies with the key the platform publishes, and does not once tampered with.
func TestReceiverExampleErasedDeviceLeavesNothingAndTheReportVerifies(t *testing.T) {
	ctx := testContext(t, 50*time.Second)
	p := testPlatform(t)
	db, dbURL := testDB(t)
	creds, err := p.CreateEnterprise(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	pushURL, _ := startExample(ctx, t, p, dbURL, creds)
	if err := p.SetPushURL(ctx, creds.EnterpriseID, pushURL); err != nil {
		t.Fatal(err)
	}
	prefix := "gone" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	erasedDevice := "DEV-GO-ERASE-" + prefix
	var lines strings.Builder
	var erasedIDs, contents []string
	for n := 0; n < 5; n++ {
		audioID, title, words := fmt.Sprintf("%s_%d", prefix, n), fmt.Sprintf("Call %d with the dentist", n), fmt.Sprintf("private words number %d", n)
		lines.WriteString(transcribed(audioID, erasedDevice, title, words, 9200+n))
		erasedIDs = append(erasedIDs, audioID)
		contents = append(contents, title, words)
	}
	contents = append(contents, erasedDevice)
	lines.WriteString(transcribed(prefix+"_kept", "DEV-GO-KEPT", "The call that stays", "words that stay", 9299))
	if _, err := p.Import(ctx, creds.EnterpriseID, lines.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitForDeliveries(ctx, creds.EnterpriseID, 12, ofPrefix(prefix), "confirmed"); err != nil {
		t.Fatal(err)
	}
	if held := rowsHolding(ctx, t, db, contents); len(held) != len(contents) {
		t.Fatalf("before the erasure, the rows hold only %v of %v", held, contents)
	}

	created, err := p.EraseDevice(ctx, creds.EnterpriseID, erasedDevice, "ticket 42 — Zoë asked")
	if err != nil || created.Recordings != 5 {
		t.Fatalf("the erasure: %+v %v", created, err)
	}
	erasure, err := p.WaitForErasure(ctx, created.ErasureID, "confirmed")
	if err != nil || len(erasure.Endpoints) != 1 || erasure.Endpoints[0].Deletions != 5 ||
		erasure.Endpoints[0].Acknowledged != 5 || erasure.Endpoints[0].Confirmed != 5 {
		t.Fatalf("the erasure: %+v %v", erasure, err)
	}
	if held := rowsHolding(ctx, t, db, contents); len(held) != 0 {
		t.Fatalf("after the erasure, the rows still hold %v", held)
	}
	if got := storedRecordings(ctx, t, db, prefix); got != strings.Repeat(`"" false true, `, 5)+`"The call that stays" true false` {
		t.Fatalf("stored: %s", got)
	}

	verifyErasureReport(ctx, t, p, created.ErasureID, erasedIDs, erasedDevice)
}

// rowsHolding is what of contents some row of any table of the test's schema holds, as text.
func rowsHolding(ctx context.Context, t *testing.T, db *sql.DB, contents []string) []string {
	t.Helper()
	tables, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	var names []string
	for tables.Next() {
		var name string
		if err := tables.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	tables.Close()
	for _, name := range names {
		var text sql.NullString
		err := db.QueryRowContext(ctx, `SELECT string_agg(t::text, E'\n') FROM `+pq.QuoteIdentifier(name)+` t`).Scan(&text)
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(text.String)
	}
	var held []string
	for _, content := range contents {
		if strings.Contains(all.String(), content) {
			held = append(held, content)
		}
	}
	return held
}

// storedRecordings is the example's table: per row, its title, whether it has data, whether it is deleted.
func storedRecordings(ctx context.Context, t *testing.T, db *sql.DB, prefix string) string {
	t.Helper()
	rows, err := db.QueryContext(ctx, `SELECT title, data, deleted FROM earshot_recordings WHERE audio_id LIKE $1 ORDER BY audio_id`, prefix+"%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var title, data string
		var deleted bool
		if err := rows.Scan(&title, &data, &deleted); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%q %v %v", title, data != "", deleted))
	}
	return strings.Join(got, ", ")
}

// canonicalJSON is RFC 8785's form of a report of strings, integers, booleans, null, arrays and
// objects: keys sorted, no whitespace, UTF-8 unescaped (json.Number keeps each integer as sent).
func canonicalJSON(t *testing.T, report map[string]interface{}) []byte {
	t.Helper()
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(report); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

// verifyErasureReport checks the erasure's signed report against the published key.
func verifyErasureReport(ctx context.Context, t *testing.T, p *platformtest.Platform, erasureID int64,
	erasedIDs []string, erasedDevice string) {
	t.Helper()
	signed, err := p.ErasureReport(ctx, erasureID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(signed.Report, []byte(erasedDevice)) {
		t.Fatalf("the report names the device: %s", signed.Report)
	}
	decoder := json.NewDecoder(bytes.NewReader(signed.Report))
	decoder.UseNumber()
	var report map[string]interface{}
	if err := decoder.Decode(&report); err != nil {
		t.Fatal(err)
	}
	sort.Strings(erasedIDs)
	if ids, _ := json.Marshal(report["audioIds"]); report["state"] != "confirmed" ||
		report["reason"] != "ticket 42 — Zoë asked" || string(ids) != string(mustMarshal(t, erasedIDs)) {
		t.Fatalf("the report: %s", signed.Report)
	}
	jwk, err := p.FetchErasureKey(ctx)
	if err != nil || jwk.Kty != "OKP" || jwk.Crv != "Ed25519" || jwk.Kid != report["keyId"] {
		t.Fatalf("the key: %+v %v", jwk, err)
	}
	x, err := base64.RawURLEncoding.DecodeString(jwk.X)
	if err != nil || len(x) != ed25519.PublicKeySize {
		t.Fatalf("the key's x: %q %v", jwk.X, err)
	}
	signature, err := base64.RawURLEncoding.DecodeString(signed.Signature)
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(x, canonicalJSON(t, report), signature) {
		t.Fatalf("the signature does not verify the report %s", canonicalJSON(t, report))
	}
	report["recordings"] = json.Number("4")
	if ed25519.Verify(x, canonicalJSON(t, report), signature) {
		t.Fatal("a tampered report verifies")
	}
}

func mustMarshal(t *testing.T, v interface{}) []byte {
	t.Helper()
	text, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return text
}
