package earshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// mediaServer serves one file under any link /media/N, as Earshot's media route does (Range with
// If-Range, ETag, Repr-Digest), and can cut, stall or refuse answers.
type mediaServer struct {
	*httptest.Server
	body   []byte
	etag   string // "" for none
	digest string // the Repr-Digest header; "" for none

	mu sync.Mutex
	// cutAt, stallAt: the next answer is cut (its connection closed) or stalls (until the client
	// goes) once it sent this many bytes of the file; 0 for none.
	cutAt, stallAt int
	refuse         map[string]int // link path → HTTP status (403 expired, 404 gone)
	requests       []http.Header
	links          int
}

func newMediaServer(t *testing.T, size int) *mediaServer {
	m := &mediaServer{body: make([]byte, size), refuse: map[string]int{}}
	_, _ = rand.Read(m.body)
	sum := sha256.Sum256(m.body)
	m.etag = `"` + hex.EncodeToString(sum[:]) + `"`
	m.digest = "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	m.Server = httptest.NewServer(m)
	t.Cleanup(m.Close)
	return m
}

// freshLink is a new link to the file, as a new query would answer.
func (m *mediaServer) freshLink(context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.links++
	return fmt.Sprintf("%s/media/%d", m.URL, m.links), nil
}

func (m *mediaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.requests = append(m.requests, r.Header.Clone())
	status, cutAt, stallAt := m.refuse[r.URL.Path], m.cutAt, m.stallAt
	m.cutAt, m.stallAt = 0, 0
	m.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"code":%d,"msg":"refused","requestId":"req-1"}`, status*10)
		return
	}
	start := 0
	if n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(r.Header.Get("Range"), "bytes="), "-")); err == nil &&
		m.etag != "" && r.Header.Get("If-Range") == m.etag {
		start = n
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(m.body)-1, len(m.body)))
	}
	m.writeHeaders(w, start)
	if start > 0 {
		w.WriteHeader(http.StatusPartialContent)
	}
	switch {
	case cutAt > 0:
		_, _ = w.Write(m.body[start:cutAt])
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	case stallAt > 0:
		_, _ = w.Write(m.body[start:stallAt])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	default:
		_, _ = w.Write(m.body[start:])
	}
}

func (m *mediaServer) writeHeaders(w http.ResponseWriter, start int) {
	w.Header().Set("Content-Type", "audio/wav")
	w.Header().Set("Content-Length", strconv.Itoa(len(m.body)-start))
	if m.etag != "" {
		w.Header().Set("ETag", m.etag)
	}
	if m.digest != "" {
		w.Header().Set("Repr-Digest", m.digest)
	}
}

func (m *mediaServer) request(n int) http.Header {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[n]
}

func downloadClient(t *testing.T, timeout time.Duration) *Client {
	t.Helper()
	client, err := NewClient(Config{BaseURL: "http://127.0.0.1:1", EnterpriseID: 1, KeyVersion: 1,
		Secret: testSecret, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// checkDownloaded checks the file is the media's, verified, with nothing left beside it.
func checkDownloaded(t *testing.T, m *mediaServer, got *DownloadedAudio, path string) {
	t.Helper()
	sum := sha256.Sum256(m.body)
	if got.SHA256 != hex.EncodeToString(sum[:]) || got.Bytes != int64(len(m.body)) || got.ContentType != "audio/wav" {
		t.Fatalf("downloaded %+v", got)
	}
	if text, err := os.ReadFile(path); err != nil || !bytes.Equal(text, m.body) {
		t.Fatalf("the file is not the media's: %v", err)
	}
	leftovers, _ := filepath.Glob(path + ".*")
	if len(leftovers) != 0 {
		t.Fatalf("left beside the file: %v", leftovers)
	}
}

func TestDownloadResumesACutConnection(t *testing.T) {
	m := newMediaServer(t, 300_000)
	m.cutAt = 120_000
	path := filepath.Join(t.TempDir(), "take.wav")
	got, err := downloadClient(t, 0).downloadLink(testContext(t, 20*time.Second), m.freshLink, path, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDownloaded(t, m, got, path)
	if got.Resumed != 1 || !got.Verified {
		t.Fatalf("resumed %d, verified %v", got.Resumed, got.Verified)
	}
	if r := m.request(1); r.Get("Range") != "bytes=120000-" || r.Get("If-Range") != m.etag {
		t.Fatalf("the second request asked Range %q If-Range %q", r.Get("Range"), r.Get("If-Range"))
	}
}

func TestDownloadOfAnExpiredLinkGoesOnWithAFreshOne(t *testing.T) {
	m := newMediaServer(t, 50_000)
	m.refuse["/media/1"] = http.StatusForbidden
	path := filepath.Join(t.TempDir(), "take.wav")
	got, err := downloadClient(t, 0).downloadLink(testContext(t, 20*time.Second), m.freshLink, path, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDownloaded(t, m, got, path)
	if m.links != 2 {
		t.Fatalf("%d links asked for, want 2", m.links)
	}
}

func TestDownloadRefusedTwiceInARowIsReturned(t *testing.T) {
	m := newMediaServer(t, 50_000)
	m.refuse["/media/1"], m.refuse["/media/2"] = http.StatusForbidden, http.StatusForbidden
	path := filepath.Join(t.TempDir(), "take.wav")
	_, err := downloadClient(t, 0).downloadLink(testContext(t, 20*time.Second), m.freshLink, path, DownloadOptions{})
	if !errors.Is(err, &Error{Code: CodeForbidden}) {
		t.Fatalf("got %v, want 4030", err)
	}
}
