package platformtests

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
	"github.com/earshot/earshot/kits/go/platformtests/platformtest"
)

// mediaTransport plays tricks on the platform's media links: it cuts the first answer's body after
// cutAfter bytes, and sends the first request to expired instead.
type mediaTransport struct {
	mu       sync.Mutex
	cutAfter int64
	expired  string
	media    int
	queries  int
}

func (m *mediaTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	m.mu.Lock()
	if req.URL.Path == audiosPath {
		m.queries++
	}
	media := strings.HasPrefix(req.URL.Path, "/media/")
	if media {
		m.media++
		if m.expired != "" {
			req = req.Clone(req.Context())
			req.URL, _ = url.Parse(m.expired)
			m.expired = ""
		}
	}
	cutAfter := m.cutAfter
	if media {
		m.cutAfter = 0
	}
	m.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && media && cutAfter > 0 {
		resp.Body = &cutBody{ReadCloser: resp.Body, left: cutAfter}
	}
	return resp, err
}

// cutBody ends in a broken connection after left bytes.
type cutBody struct {
	io.ReadCloser
	left int64
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

// stored is an enterprise with one recording whose audio Earshot stores, and a client going through
// a mediaTransport.
type stored struct {
	client    *earshot.Client
	transport *mediaTransport
	creds     platformtest.Credentials
	audioID   string
	audio     []byte
}

func storedAudio(t *testing.T, ctx context.Context, p *platformtest.Platform, size int) stored {
	t.Helper()
	creds, err := p.CreateEnterprise(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	audioID := "dl" + uniqueID()
	jsonl := `{"audioId":"` + audioID + `","deviceUid":"DEV-1","title":"Take","recordedAt":"2026-11-01T08:00:00Z","denoiseUrl":"https://cdn.example/x.wav","recordDuration":1}` + "\n"
	if _, err := p.Import(ctx, creds.EnterpriseID, jsonl); err != nil {
		t.Fatal(err)
	}
	audio := make([]byte, size)
	_, _ = rand.Read(audio)
	if err := p.UploadAudio(ctx, creds.EnterpriseID, audioID, "audio/wav", audio); err != nil {
		t.Fatal(err)
	}
	transport := &mediaTransport{}
	client, err := earshot.NewClient(earshot.Config{BaseURL: p.PartnerURL, EnterpriseID: creds.EnterpriseID,
		KeyVersion: creds.KeyVersion, Secret: creds.Secret, HTTPClient: &http.Client{Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	return stored{client, transport, creds, audioID, audio}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestPlatformAudioIsDownloadedExactlyAfterACut(t *testing.T) {
	ctx := testContext(t, 40*time.Second)
	s := storedAudio(t, ctx, testPlatform(t), 2_000_000)
	s.transport.cutAfter = 1_000_000
	path := filepath.Join(t.TempDir(), "take.wav")
	got, err := s.client.DownloadAudio(ctx, s.audioID, path, earshot.DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Resumed != 1 || !got.Verified || got.SHA256 != sha256Hex(s.audio) || got.ContentType != "audio/wav" {
		t.Fatalf("downloaded %+v (%d media requests)", got, s.transport.media)
	}
	if written, _ := os.ReadFile(path); string(written) != string(s.audio) {
		t.Fatal("the file is not the audio uploaded")
	}
}

// A link refused as expired is replaced by a fresh one from a new query; a deleted recording is 4040.
func TestPlatformExpiredLinkIsReplacedAndDeletedAudioIsGone(t *testing.T) {
	ctx := testContext(t, 50*time.Second)
	p, err := platformtest.Start(ctx, "EARSHOT_MEDIA_URL_TTL=1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	s := storedAudio(t, ctx, p, 50_000)
	s.transport.expired = expiredLink(t, ctx, s.client, s.audioID)
	got, err := s.client.DownloadAudio(ctx, s.audioID, filepath.Join(t.TempDir(), "take.wav"), earshot.DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.SHA256 != sha256Hex(s.audio) || s.transport.queries != 3 {
		t.Fatalf("downloaded %+v after %d queries, want 3 (the expired link's, the first, a fresh one)", got, s.transport.queries)
	}
	if err := p.DeleteRecording(ctx, s.creds.EnterpriseID, s.audioID); err != nil {
		t.Fatal(err)
	}
	_, err = s.client.DownloadAudio(ctx, s.audioID, filepath.Join(t.TempDir(), "gone.wav"), earshot.DownloadOptions{})
	if !errors.Is(err, &earshot.Error{Code: earshot.CodeNotFound}) {
		t.Fatalf("got %v, want 4040", err)
	}
}

// expiredLink is a link to the recording's audio that the platform now refuses with 403.
func expiredLink(t *testing.T, ctx context.Context, client *earshot.Client, audioID string) string {
	t.Helper()
	page, err := client.QueryAudios(ctx, earshot.Filter{AudioID: audioID})
	if err != nil || len(page.Items) != 1 || page.Items[0].Data.DenoiseURL == "" {
		t.Fatalf("no link to %s's audio: %+v %v", audioID, page, err)
	}
	link := page.Items[0].Data.DenoiseURL
	for {
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden {
			return link
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the link still answers %d", resp.StatusCode)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestPlatformRecordingWithoutAudio(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	prefix := "na" + uniqueID()
	jsonl := `{"audioId":"` + prefix + `","deviceUid":"DEV-1","title":"Words","recordedAt":"2026-11-01T08:00:00Z","transcript":{"transcriptId":1,"transcriptText":"hi","sentences":[],"durationMs":10,"wordsCount":1}}` + "\n"
	client, _, _ := newEnterprise(t, ctx, testPlatform(t), jsonl)
	var noAudio *earshot.NoAudioError
	if _, err := client.DownloadAudio(ctx, prefix, filepath.Join(t.TempDir(), "x.wav"), earshot.DownloadOptions{}); !errors.As(err, &noAudio) {
		t.Fatalf("got %v, want a NoAudioError", err)
	}
	if _, err := client.DownloadAudio(ctx, prefix+"_none", filepath.Join(t.TempDir(), "x.wav"), earshot.DownloadOptions{}); !errors.Is(err, &earshot.Error{Code: earshot.CodeNotFound}) {
		t.Fatalf("got %v, want 4040", err)
	}
}
