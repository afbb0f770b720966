package earshot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDownloadOfOtherBytesThanStatedIsRefused(t *testing.T) {
	m := newMediaServer(t, 50_000)
	m.digest = "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:" // the SHA-256 of no bytes
	path := filepath.Join(t.TempDir(), "take.wav")
	_, err := downloadClient(t, 0).downloadLink(testContext(t, 20*time.Second), m.freshLink, path, DownloadOptions{})
	var mismatch *DigestMismatchError
	if !errors.As(err, &mismatch) || mismatch.Expected != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("got %v, want a DigestMismatchError", err)
	}
	if left, _ := filepath.Glob(path + "*"); len(left) != 0 {
		t.Fatalf("left: %v", left)
	}
}

// Gone: Earshot's 404 (4040) and any other link's 404 alike.
func TestDownloadOfGoneAudioRemovesThePart(t *testing.T) {
	m := newMediaServer(t, 50_000)
	m.refuse["/media/1"] = http.StatusNotFound
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	links := map[string]func(context.Context) (string, error){
		"earshot": m.freshLink,
		"plain":   func(context.Context) (string, error) { return plain.URL + "/x.wav", nil },
	}
	for name, freshLink := range links {
		path := filepath.Join(t.TempDir(), "take.wav")
		_ = os.WriteFile(path+".part", []byte("earlier"), 0o644)
		_ = os.WriteFile(path+".part.etag", []byte(m.etag), 0o644)
		_, err := downloadClient(t, 0).downloadLink(testContext(t, 20*time.Second), freshLink, path, DownloadOptions{})
		left, _ := filepath.Glob(path + "*")
		if !errors.Is(err, &Error{Code: CodeNotFound}) || len(left) != 0 {
			t.Fatalf("%s: got %v, left %v; want 4040 and nothing left", name, err, left)
		}
	}
}

// A done ctx stops the download and keeps the part; the next call goes on from it.
func TestDownloadStoppedByItsContextResumesLater(t *testing.T) {
	m := newMediaServer(t, 200_000)
	m.stallAt = 80_000
	path := filepath.Join(t.TempDir(), "take.wav")
	ctx, cancel := context.WithCancel(testContext(t, 20*time.Second))
	stopAtStall := DownloadOptions{OnProgress: func(bytes, total int64) {
		if bytes == 80_000 && total == 200_000 {
			cancel()
		}
	}}
	client := downloadClient(t, 0)
	if _, err := client.downloadLink(ctx, m.freshLink, path, stopAtStall); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if info, err := os.Stat(path + ".part"); err != nil || info.Size() != 80_000 {
		t.Fatalf("the part: %v %v", info, err)
	}
	got, err := client.downloadLink(testContext(t, 20*time.Second), m.freshLink, path, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDownloaded(t, m, got, path)
	if got.Resumed != 1 || m.request(1).Get("Range") != "bytes=80000-" {
		t.Fatalf("resumed %d with Range %q", got.Resumed, m.request(1).Get("Range"))
	}
}

func TestDownloadThatStallsIsResumed(t *testing.T) {
	m := newMediaServer(t, 200_000)
	m.stallAt = 80_000
	path := filepath.Join(t.TempDir(), "take.wav")
	got, err := downloadClient(t, 300*time.Millisecond).downloadLink(testContext(t, 20*time.Second), m.freshLink, path, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDownloaded(t, m, got, path)
	if got.Resumed != 1 {
		t.Fatalf("resumed %d", got.Resumed)
	}
}

// A part of another file (its ETag no longer the link's) is answered whole: the download starts over.
func TestDownloadOfAChangedFileStartsOver(t *testing.T) {
	m := newMediaServer(t, 50_000)
	path := filepath.Join(t.TempDir(), "take.wav")
	_ = os.WriteFile(path+".part", []byte("bytes of an older file"), 0o644)
	_ = os.WriteFile(path+".part.etag", []byte(`"older"`), 0o644)
	got, err := downloadClient(t, 0).downloadLink(testContext(t, 20*time.Second), m.freshLink, path, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDownloaded(t, m, got, path)
	if got.Resumed != 0 || m.request(0).Get("If-Range") != `"older"` {
		t.Fatalf("resumed %d, If-Range %q", got.Resumed, m.request(0).Get("If-Range"))
	}
}

// A link that states neither ETag nor digest: a cut connection starts over, and nothing is verified.
func TestDownloadOfAPlainLinkStartsOverAfterACut(t *testing.T) {
	m := newMediaServer(t, 100_000)
	m.etag, m.digest, m.cutAt = "", "", 40_000
	path := filepath.Join(t.TempDir(), "take.wav")
	got, err := downloadClient(t, 0).downloadLink(testContext(t, 20*time.Second), m.freshLink, path, DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDownloaded(t, m, got, path)
	if got.Resumed != 0 || got.Verified || m.request(1).Get("Range") != "" {
		t.Fatalf("resumed %d, verified %v, Range %q", got.Resumed, got.Verified, m.request(1).Get("Range"))
	}
}
