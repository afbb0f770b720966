package earshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// partFile is a download's bytes so far, with the ETag they belong to kept beside them (so that a
// later call resumes), hashed as they are appended.
type partFile struct {
	path     string
	etagPath string
	file     *os.File
	// etag is the validator of the bytes had; "" when they cannot be resumed.
	etag string
	have int64
	// hash is the SHA-256 of the have bytes.
	hash hash.Hash
}

// openPart opens the part file at path for appending: with the bytes an earlier call left when their
// ETag was kept, else emptied.
func openPart(path string) (*partFile, error) {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &partFile{path: path, etagPath: path + ".etag", file: file, hash: sha256.New()}
	if err := p.resume(); err != nil {
		file.Close()
		return nil, err
	}
	return p, nil
}

func (p *partFile) resume() error {
	etag, err := os.ReadFile(p.etagPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	p.etag = strings.TrimSpace(string(etag))
	if p.etag == "" {
		return p.restart()
	}
	had, err := os.Open(p.path)
	if err != nil {
		return err
	}
	defer had.Close()
	if p.have, err = io.Copy(p.hash, had); err != nil {
		return err
	}
	if p.have == 0 {
		return p.restart()
	}
	return nil
}

// restart forgets the bytes had: the next request asks for the whole file.
func (p *partFile) restart() error {
	p.have, p.etag = 0, ""
	p.hash.Reset()
	if err := p.file.Truncate(0); err != nil {
		return err
	}
	if err := os.Remove(p.etagPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (p *partFile) keepETag(etag string) error {
	p.etag = etag
	return os.WriteFile(p.etagPath, []byte(etag), 0o644)
}

func (p *partFile) append(chunk []byte) error {
	if _, err := p.file.Write(chunk); err != nil {
		return err
	}
	p.hash.Write(chunk)
	p.have += int64(len(chunk))
	return nil
}

func (p *partFile) close() { p.file.Close() }

func removePart(path string) {
	_ = os.Remove(path)
	_ = os.Remove(path + ".etag")
}

// finish makes the part file durable, checks it against the link's digest and renames it to path.
func (t *transfer) finish(path string) (*DownloadedAudio, error) {
	p := t.part
	err := p.file.Sync()
	if closeErr := p.file.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, err
	}
	sum := p.hash.Sum(nil)
	if t.digest != nil && !bytes.Equal(sum, t.digest) {
		removePart(p.path)
		return nil, &DigestMismatchError{Expected: hex.EncodeToString(t.digest), Actual: hex.EncodeToString(sum)}
	}
	if err := os.Rename(p.path, path); err != nil {
		return nil, err
	}
	_ = os.Remove(p.etagPath)
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return &DownloadedAudio{Bytes: p.have, SHA256: hex.EncodeToString(sum), ContentType: t.contentType,
		Resumed: t.resumed, Verified: t.digest != nil}, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
