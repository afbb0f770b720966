package pgtest

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
)

// recordingsWithAudio is a partner's store: a table of recordings and a folder with each one's audio.
type recordingsWithAudio struct {
	db    *sql.DB
	audio string
}

func newRecordingsWithAudio(t *testing.T, db *sql.DB) *recordingsWithAudio {
	t.Helper()
	if _, err := db.Exec(`CREATE TABLE partner_recordings (audio_id text PRIMARY KEY, title text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return &recordingsWithAudio{db: db, audio: t.TempDir()}
}

func (s *recordingsWithAudio) file(audioID string) string {
	return filepath.Join(s.audio, audioID+".mp3")
}

// store is the receiver's Store: a deletion removes the row and the audio file, durably.
func (s *recordingsWithAudio) store(ctx context.Context, event *earshot.PushEvent) error {
	if !event.Deleted() {
		_, err := s.db.ExecContext(ctx, `INSERT INTO partner_recordings VALUES ($1, $2)
			ON CONFLICT (audio_id) DO UPDATE SET title = $2`, event.AudioID, event.Data.Title)
		if err != nil {
			return err
		}
		return os.WriteFile(s.file(event.AudioID), []byte("ID3 audio"), 0o644)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM partner_recordings WHERE audio_id = $1`, event.AudioID); err != nil {
		return err
	}
	if err := os.Remove(s.file(event.AudioID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir, err := os.Open(s.audio)
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// holds tells whether the store has the recording's row, and its audio file.
func (s *recordingsWithAudio) holds(t *testing.T, audioID string) (bool, bool) {
	t.Helper()
	var rows int
	if err := s.db.QueryRow(`SELECT count(*) FROM partner_recordings WHERE audio_id = $1`, audioID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	_, err := os.Stat(s.file(audioID))
	return rows == 1, err == nil
}

// receive waits for the next call on ch, which must be for want.
func receive(t *testing.T, ctx context.Context, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("called for %s, want %s", got, want)
		}
	case <-ctx.Done():
		t.Fatalf("no call for %s", want)
	}
}

// A deletion removes the recording and its audio from the store before it is answered; its callback,
// sent after the answer, confirms the erasure, apart from the recording's own receipt.
func TestReceiverRemovesADeletedRecordingThenConfirmsItsErasure(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	db, _ := testDB(t)
	recordings := newRecordingsWithAudio(t, db)
	receipts, erasures := make(chan string, 10), make(chan string, 10)
	outbox := fastOutbox(t, db,
		func(_ context.Context, audioID string) error { receipts <- audioID; return nil },
		func(_ context.Context, audioID string) error { erasures <- audioID; return nil })
	receiver, err := earshot.NewReceiver(earshot.ReceiverConfig{
		Secrets: map[int]string{1: secret}, Outbox: outbox, Store: recordings.store, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(receiver)
	t.Cleanup(server.Close)
	p := &partner{t: t, url: server.URL}

	status, code := p.post(ctx, seal(t, secret, 1, pushEvent("evt-erase-1", earshot.EventAudioReady, "aud_erase", audioData())), nil)
	expectAnswer(t, "the recording", status, code, earshot.CodeOK)
	receive(t, ctx, receipts, "aud_erase")
	if row, file := recordings.holds(t, "aud_erase"); !row || !file {
		t.Fatalf("stored: row %v, audio %v", row, file)
	}
	deletion := seal(t, secret, 1, pushEvent("evt-erase-2", earshot.EventDeleted, "aud_erase", map[string]interface{}{}))
	status, code = p.post(ctx, deletion, nil)
	expectAnswer(t, "its deletion", status, code, earshot.CodeOK)
	if row, file := recordings.holds(t, "aud_erase"); row || file {
		t.Fatalf("after the deletion's answer: row %v, audio %v", row, file)
	}
	receive(t, ctx, erasures, "aud_erase")
	waitState(t, ctx, outbox, "evt-erase-2", earshot.CallbackConfirmed)
	callbacks, err := outbox.Callbacks(ctx, "aud_erase")
	if err != nil || len(callbacks) != 2 || callbacks[0].Erased || !callbacks[1].Erased ||
		callbacks[0].State != earshot.CallbackConfirmed || callbacks[1].EventID != "evt-erase-2" {
		t.Fatalf("the receipt, then the erasure confirmation: %+v %v", callbacks, err)
	}
}

// 4040 (the recording was never the partner's) or 4001 (not deleted) for an erasure is final.
func TestAnErasureConfirmationRefusedFor4040Or4001IsFailedForGood(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	db, _ := testDB(t)
	refusals := map[string]int{"aud_never_had": earshot.CodeNotFound, "aud_not_deleted": earshot.CodeInvalidParameter}
	outbox := fastOutbox(t, db, func(context.Context, string) error { return nil },
		func(_ context.Context, audioID string) error {
			return &earshot.Error{Code: refusals[audioID], Msg: "refused"}
		})
	receiver, _ := earshot.NewReceiver(earshot.ReceiverConfig{
		Secrets: map[int]string{1: secret}, Outbox: outbox, Logf: t.Logf,
		Store: func(context.Context, *earshot.PushEvent) error { return nil },
	})
	server := httptest.NewServer(receiver)
	t.Cleanup(server.Close)
	p := &partner{t: t, url: server.URL}
	for audioID := range refusals {
		status, code := p.post(ctx, seal(t, secret, 1, pushEvent("evt-"+audioID, earshot.EventDeleted, audioID, map[string]interface{}{})), nil)
		expectAnswer(t, audioID, status, code, earshot.CodeOK)
		if c := waitState(t, ctx, outbox, "evt-"+audioID, earshot.CallbackFailed); c.Attempts != 1 || !c.Erased {
			t.Fatalf("%+v", c)
		}
	}
}

// A table made before erasure confirmations gets its erased column: what it held is sent as before.
func TestAnOutboxTableOfTheEarlierLayoutOpens(t *testing.T) {
	ctx := testContext(t, 20*time.Second)
	db, _ := testDB(t)
	earlier := []string{
		`CREATE TABLE earshot_go_receipt_callbacks (event_id VARCHAR(255) NOT NULL PRIMARY KEY,
			audio_id TEXT NOT NULL, event_type TEXT NOT NULL, received_at BIGINT NOT NULL,
			state VARCHAR(16) NOT NULL, due_at BIGINT, claimed_by VARCHAR(64), claim_no INTEGER NOT NULL DEFAULT 0,
			rearms INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,
			attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, done_at BIGINT)`,
		`INSERT INTO earshot_go_receipt_callbacks (event_id, audio_id, event_type, received_at, state, due_at)
			VALUES ('evt-earlier', 'aud_earlier', 'recording.audio_ready', 1, 'pending', 1),
			       ('evt-earlier-deleted', 'aud_earlier', 'recording.deleted', 2, 'skipped', NULL)`,
	}
	for _, statement := range earlier {
		if _, err := db.Exec(statement); err != nil {
			t.Fatal(err)
		}
	}
	sent := make(chan string, 10)
	outbox := fastOutbox(t, db, func(_ context.Context, audioID string) error { sent <- audioID; return nil },
		func(_ context.Context, audioID string) error { sent <- "erased " + audioID; return nil })
	receive(t, ctx, sent, "aud_earlier")
	waitState(t, ctx, outbox, "evt-earlier", earshot.CallbackConfirmed)
	callbacks, err := outbox.Callbacks(ctx, "aud_earlier")
	if err != nil || len(callbacks) != 2 || callbacks[0].Erased || callbacks[1].Erased ||
		callbacks[1].State != earshot.CallbackSkipped {
		t.Fatalf("%+v %v", callbacks, err)
	}
}

// A receiver is killed after it removed a deleted recording and answered, before its erasure
// confirmation went out: a fresh receiver on the same database sends it, and the platform answers 2000.
func TestPlatformKillBetweenDeletionAndErasureConfirmation(t *testing.T) {
	ctx := testContext(t, 50*time.Second)
	p := testPlatform(t)
	db, dbURL := testDB(t)
	creds, err := p.CreateEnterprise(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(buildBinary(ctx, t, "./internal/killreceiver"))
	child.Env = kitEnv(dbURL, p, creds)
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	lines := scanLines(stdout)
	pushURL := strings.TrimPrefix(nextLine(t, ctx, lines, "LISTENING "), "LISTENING ")
	if err := p.SetPushURL(ctx, creds.EnterpriseID, pushURL); err != nil {
		t.Fatal(err)
	}
	prefix := "erase" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	recording := strings.SplitN(strings.ReplaceAll(twoRecordings, "%s", prefix), "\n", 2)[0] + "\n"
	if _, err := p.Import(ctx, creds.EnterpriseID, recording); err != nil {
		t.Fatal(err)
	}
	audioID := prefix + "_audio"
	nextLine(t, ctx, lines, "BLOCKED "+audioID)
	if err := p.DeleteRecording(ctx, creds.EnterpriseID, audioID); err != nil {
		t.Fatal(err)
	}
	nextLine(t, ctx, lines, "ERASURE BLOCKED "+audioID)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	client := newClient(t, p, creds)
	outbox := fastOutbox(t, db, client.ConfirmReceipt, client.ConfirmErasure)
	for {
		callbacks, err := outbox.Callbacks(ctx, audioID)
		if err != nil {
			t.Fatal(err)
		}
		if len(callbacks) == 2 && callbacks[0].State == earshot.CallbackConfirmed &&
			callbacks[1].Erased && callbacks[1].State == earshot.CallbackConfirmed {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the receipt and the erasure confirmation never both confirmed: %+v", callbacks)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// scanLines sends each line read from r.
func scanLines(r io.Reader) <-chan string {
	lines := make(chan string, 16)
	go func() {
		scanner := bufio.NewScanner(r)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
	}()
	return lines
}
