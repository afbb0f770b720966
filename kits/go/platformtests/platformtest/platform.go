// Package platformtest starts a real Earshot platform (the repository's Node build) for the Go kit's
// tests, and drives it through its admin API.
package platformtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Platform is a platform process with an in-memory database.
type Platform struct {
	PartnerURL string `json:"partnerUrl"`
	AdminURL   string `json:"adminUrl"`
	AdminToken string `json:"adminToken"`
	PID        int    `json:"pid"`

	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
}

// RepoRoot is the repository's root, found upwards from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "packages", "test-kit")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("platformtest: no repository root above the working directory")
		}
		dir = parent
	}
}

// Missing says why no platform can be started here ("" when one can).
func Missing() string {
	root, err := RepoRoot()
	if err != nil {
		return err.Error()
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "no node on PATH"
	}
	if _, err := os.Stat(filepath.Join(root, "packages/test-kit/dist/platform-process.js")); err != nil {
		return "the platform is not built (npm ci, or npm run build)"
	}
	return ""
}

// Start runs packages/test-kit/dist/platform-process.js on loopback, with an in-memory database,
// pushes allowed to loopback and retried after a second, and waits for its address line. env adds
// settings (e.g. "EARSHOT_MEDIA_URL_TTL=1").
func Start(ctx context.Context, env ...string) (*Platform, error) {
	if why := Missing(); why != "" {
		return nil, errors.New("platformtest: " + why)
	}
	root, _ := RepoRoot()
	cmd := exec.Command("node", filepath.Join(root, "packages/test-kit/dist/platform-process.js"))
	cmd.Env = append(EnvironWithout("DATABASE_URL", "EARSHOT_"),
		"EARSHOT_DATA_DIR=memory://",
		"EARSHOT_HOST=127.0.0.1", "EARSHOT_PORT=0",
		"EARSHOT_ADMIN_HOST=127.0.0.1", "EARSHOT_ADMIN_PORT=0",
		"EARSHOT_PUSH_ALLOW_PRIVATE=1",
		"EARSHOT_PUSH_RETRY_SCHEDULE=1,1,1,1,1,1,1,1,1,1",
		"EARSHOT_SHUTDOWN_GRACE=1",
		"EARSHOT_LOG_LEVEL=warn",
	)
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &Platform{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	line := make(chan string, 1)
	go func() {
		reader := bufio.NewReader(stdout)
		text, _ := reader.ReadString('\n')
		line <- text
		_, _ = io.Copy(io.Discard, reader)
	}()
	select {
	case text := <-line:
		if err := json.Unmarshal([]byte(text), p); err != nil || p.AdminURL == "" {
			p.Stop()
			return nil, fmt.Errorf("platformtest: the platform printed %q; stderr: %s", text, p.stderr.String())
		}
		return p, nil
	case <-ctx.Done():
		p.Stop()
		return nil, fmt.Errorf("platformtest: the platform did not start: %w; stderr: %s", ctx.Err(), p.stderr.String())
	}
}

// EnvironWithout is this process's environment less the variables starting with any prefix.
func EnvironWithout(prefixes ...string) []string {
	var env []string
	for _, entry := range os.Environ() {
		keep := true
		for _, prefix := range prefixes {
			if strings.HasPrefix(entry, prefix) {
				keep = false
			}
		}
		if keep {
			env = append(env, entry)
		}
	}
	return env
}

// Stop ends the platform: SIGTERM, then SIGKILL after 5 s.
func (p *Platform) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Log is what the platform wrote on stderr so far.
func (p *Platform) Log() string { return p.stderr.String() }

// Credentials are an enterprise's, as created.
type Credentials struct {
	EnterpriseID int64  `json:"enterpriseId"`
	KeyVersion   int    `json:"keyVersion"`
	Secret       string `json:"secret"`
}

// CreateEnterprise creates an enterprise and returns its credentials.
func (p *Platform) CreateEnterprise(ctx context.Context, name string) (Credentials, error) {
	var creds Credentials
	err := p.admin(ctx, http.MethodPost, "/admin/v1/enterprises", "application/json",
		mustJSON(map[string]string{"name": name}), &creds)
	return creds, err
}

// Import imports recordings as JSON Lines and returns the summary line.
func (p *Platform) Import(ctx context.Context, enterpriseID int64, jsonl string) (imported int, err error) {
	var answer bytes.Buffer
	path := fmt.Sprintf("/admin/v1/enterprises/%d/recordings/import", enterpriseID)
	if err := p.admin(ctx, http.MethodPost, path, "application/x-ndjson", []byte(jsonl), &answer); err != nil {
		return 0, err
	}
	lines := strings.Split(strings.TrimSpace(answer.String()), "\n")
	var summary struct {
		Imported *int            `json:"imported"`
		Error    json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &summary) != nil || summary.Imported == nil {
		return 0, fmt.Errorf("platformtest: the import answered %s", answer.String())
	}
	return *summary.Imported, nil
}

// SetPushURL sets the enterprise's one push endpoint (the route behind `earshot enterprise set-push-url`).
func (p *Platform) SetPushURL(ctx context.Context, enterpriseID int64, url string) error {
	path := fmt.Sprintf("/admin/v1/enterprises/%d/push-url", enterpriseID)
	return p.admin(ctx, http.MethodPut, path, "application/json", mustJSON(map[string]string{"pushUrl": url}), nil)
}

// RequireIssuedAt sets whether the enterprise refuses sealed requests without issuedAt (the route
// behind `earshot enterprise update --require-issued-at`).
func (p *Platform) RequireIssuedAt(ctx context.Context, enterpriseID int64, required bool) error {
	path := fmt.Sprintf("/admin/v1/enterprises/%d", enterpriseID)
	body := mustJSON(map[string]bool{"requireIssuedAt": required})
	return p.admin(ctx, http.MethodPatch, path, "application/json", body, nil)
}

// DeleteRecording deletes a recording: a recording.deleted push goes out.
func (p *Platform) DeleteRecording(ctx context.Context, enterpriseID int64, audioID string) error {
	path := fmt.Sprintf("/admin/v1/enterprises/%d/recordings/%s", enterpriseID, audioID)
	return p.admin(ctx, http.MethodDelete, path, "", nil, nil)
}

// UploadAudio stores audio for a recording (the route behind `earshot recordings upload-audio`).
func (p *Platform) UploadAudio(ctx context.Context, enterpriseID int64, audioID, contentType string, audio []byte) error {
	path := fmt.Sprintf("/admin/v1/enterprises/%d/recordings/%s/audio", enterpriseID, audioID)
	return p.admin(ctx, http.MethodPut, path, contentType, audio, nil)
}

// Delivery is a push delivery as the admin API shows it.
type Delivery struct {
	DeliveryID int64  `json:"deliveryId"`
	AudioID    string `json:"audioId"`
	EventID    string `json:"eventId"`
	EventType  string `json:"eventType"`
	State      string `json:"state"`
	Attempts   []struct {
		Outcome      string `json:"outcome"`
		HTTPStatus   *int   `json:"httpStatus"`
		ResponseCode *int   `json:"responseCode"`
		Error        string `json:"error"`
	} `json:"attempts"`
}

// Deliveries lists the enterprise's deliveries, newest first.
func (p *Platform) Deliveries(ctx context.Context, enterpriseID int64) ([]Delivery, error) {
	var answer struct {
		Deliveries []Delivery `json:"deliveries"`
	}
	path := fmt.Sprintf("/admin/v1/deliveries?enterpriseId=%d", enterpriseID)
	err := p.admin(ctx, http.MethodGet, path, "", nil, &answer)
	return answer.Deliveries, err
}

// WaitForDeliveries polls until every delivery of the enterprise matching want is in one of states,
// and at least count of them exist.
func (p *Platform) WaitForDeliveries(ctx context.Context, enterpriseID int64, count int,
	want func(Delivery) bool, states ...string) ([]Delivery, error) {
	var last []Delivery
	for {
		all, err := p.Deliveries(ctx, enterpriseID)
		if err != nil {
			return nil, err
		}
		last = last[:0]
		done := true
		for _, d := range all {
			if want != nil && !want(d) {
				continue
			}
			last = append(last, d)
			if !contains(states, d.State) {
				done = false
			}
		}
		if done && len(last) >= count {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("platformtest: deliveries not %v: %s", states, mustJSON(last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func contains(list []string, s string) bool {
	for _, each := range list {
		if each == s {
			return true
		}
	}
	return false
}

// admin calls the admin API; into is a *bytes.Buffer for the raw answer, or a value to decode it in.
func (p *Platform) admin(ctx context.Context, method, path, contentType string, body []byte, into interface{}) error {
	req, err := http.NewRequestWithContext(ctx, method, p.AdminURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.AdminToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("platformtest: %s %s answered %d: %s", method, path, resp.StatusCode, text)
	}
	switch target := into.(type) {
	case nil:
		return nil
	case *bytes.Buffer:
		target.Write(text)
		return nil
	default:
		return json.Unmarshal(text, into)
	}
}

func mustJSON(v interface{}) []byte {
	text, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return text
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// CheckItem is one item of the platform's receiver check report.
type CheckItem struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Passed   bool   `json:"passed"`
	Expected string `json:"expected"`
	Evidence string `json:"evidence"`
}

// CheckReport is the platform's receiver check report (earshot endpoints check --json).
type CheckReport struct {
	URL    string      `json:"url"`
	Passed bool        `json:"passed"`
	Items  []CheckItem `json:"items"`
}

// CheckReceiver runs the platform's receiver check against url for the enterprise.
func (p *Platform) CheckReceiver(ctx context.Context, enterpriseID int64, url string, callbackWithinSeconds int) (CheckReport, error) {
	var report CheckReport
	body := mustJSON(map[string]interface{}{"url": url, "callbackWithinSeconds": callbackWithinSeconds})
	path := fmt.Sprintf("/admin/v1/enterprises/%d/endpoints/check", enterpriseID)
	err := p.admin(ctx, http.MethodPost, path, "application/json", body, &report)
	return report, err
}
