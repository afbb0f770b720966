package pgtest

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
	"github.com/earshot/earshot/kits/go/platformtests/platformtest"
)

const twoRecordings = `{"audioId":"%s_audio","deviceUid":"DEV-1","title":"Standup","recordedAt":"2026-11-02T09:00:00+08:00","denoiseUrl":"https://cdn.example.com/standup.mp3","recordDuration":61000}
{"audioId":"%s_both","deviceUid":"DEV-2","title":"Interview","recordedAt":"2026-11-02T06:00:00Z","denoiseUrl":"https://cdn.example.com/interview.mp3","recordDuration":5400000,"transcript":{"transcriptId":7002,"transcriptText":"Welcome to the show.","sentences":[{"text":"Welcome to the show.","beginTime":0,"endTime":2100}],"durationMs":5400000,"wordsCount":4}}
`

func newClient(t *testing.T, p *platformtest.Platform, creds platformtest.Credentials) *earshot.Client {
	t.Helper()
	client, err := earshot.NewClient(earshot.Config{
		BaseURL: p.PartnerURL, EnterpriseID: creds.EnterpriseID, KeyVersion: creds.KeyVersion, Secret: creds.Secret,
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func ofPrefix(prefix string) func(platformtest.Delivery) bool {
	return func(d platformtest.Delivery) bool { return strings.HasPrefix(d.AudioID, prefix) }
}

func TestPlatformPushesAreStoredAndConfirmed(t *testing.T) {
	ctx := testContext(t, 40*time.Second)
	p := testPlatform(t)
	db, _ := testDB(t)
	creds, client := newEnterprise(ctx, t, p)
	var mu sync.Mutex
	stored := map[string]*earshot.PushEvent{}
	pushURL, outbox := serveReceiver(t, db, creds, client, func(_ context.Context, event *earshot.PushEvent) error {
		mu.Lock()
		defer mu.Unlock()
		stored[event.AudioID+" "+event.EventType] = event
		return nil
	})
	if err := p.SetPushURL(ctx, creds.EnterpriseID, pushURL); err != nil {
		t.Fatal(err)
	}
	prefix := "push" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if _, err := p.Import(ctx, creds.EnterpriseID, strings.ReplaceAll(twoRecordings, "%s", prefix)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitForDeliveries(ctx, creds.EnterpriseID, 3, ofPrefix(prefix), "confirmed"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	transcript := stored[prefix+"_both "+earshot.EventTranscriptReady]
	audio := stored[prefix+"_audio "+earshot.EventAudioReady]
	mu.Unlock()
	if transcript == nil || len(transcript.Sentences) != 1 || transcript.Data.TranscriptID == nil || *transcript.Data.TranscriptID != 7002 {
		t.Fatalf("the transcript push: %+v", transcript)
	}
	if audio == nil || audio.Data.DenoiseURL == "" || audio.Data.HasTranscript() || audio.OccurredAt.IsZero() {
		t.Fatalf("the audio push: %+v", audio)
	}

	if err := p.DeleteRecording(ctx, creds.EnterpriseID, prefix+"_audio"); err != nil {
		t.Fatal(err)
	}
	deletion := func(d platformtest.Delivery) bool { return d.EventType == earshot.EventDeleted }
	if _, err := p.WaitForDeliveries(ctx, creds.EnterpriseID, 1, deletion, "confirmed"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	deleted := stored[prefix+"_audio "+earshot.EventDeleted]
	mu.Unlock()
	if deleted == nil || !deleted.Deleted() {
		t.Fatalf("the deletion: %+v", deleted)
	}
	// Its callback confirms the erasure, and the platform answered it 2000: the partner had the recording.
	if c := waitState(t, ctx, outbox, deleted.EventID, earshot.CallbackConfirmed); !c.Erased || c.Attempts != 1 {
		t.Fatalf("the erasure confirmation: %+v", c)
	}
}

// A receiver is killed after it answered a push and before its callback went out: a fresh receiver on
// the same database sends the callback, and the delivery is confirmed.
func TestPlatformKillBetweenAnswerAndCallback(t *testing.T) {
	ctx := testContext(t, 50*time.Second)
	p := testPlatform(t)
	db, dbURL := testDB(t)
	creds, err := p.CreateEnterprise(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	binary := buildBinary(ctx, t, "./internal/killreceiver")
	child := exec.Command(binary)
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
	prefix := "kill" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	recording := strings.SplitN(strings.ReplaceAll(twoRecordings, "%s", prefix), "\n", 2)[0] + "\n"
	if _, err := p.Import(ctx, creds.EnterpriseID, recording); err != nil {
		t.Fatal(err)
	}
	nextLine(t, ctx, lines, "BLOCKED "+prefix+"_audio")
	if _, err := p.WaitForDeliveries(ctx, creds.EnterpriseID, 1, ofPrefix(prefix), "acked"); err != nil {
		t.Fatal(err)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if deliveries, _ := p.Deliveries(ctx, creds.EnterpriseID); len(deliveries) != 1 || deliveries[0].State != "acked" {
		t.Fatalf("after the kill: %+v", deliveries)
	}

	client := newClient(t, p, creds)
	fastOutbox(t, db, client.ConfirmReceipt, client.ConfirmErasure)
	if _, err := p.WaitForDeliveries(ctx, creds.EnterpriseID, 1, ofPrefix(prefix), "confirmed"); err != nil {
		t.Fatal(err)
	}
}

// nextLine waits for the child's line starting with prefix.
func nextLine(t *testing.T, ctx context.Context, lines <-chan string, prefix string) string {
	t.Helper()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the receiver exited before printing %q", prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-ctx.Done():
			t.Fatalf("the receiver never printed %q", prefix)
		}
	}
}
