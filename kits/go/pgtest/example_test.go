package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
	"github.com/earshot/earshot/kits/go/platformtests/platformtest"
)

// The README's receiver, run as it is written: pushes from the platform end confirmed, stored in
// its table, and a deletion leaves a tombstone.
func TestReceiverExampleEndToEnd(t *testing.T) {
	ctx := testContext(t, 50*time.Second)
	p := testPlatform(t)
	db, dbURL := testDB(t)
	creds, err := p.CreateEnterprise(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	pushURL, example := startExample(ctx, t, p, dbURL, creds)
	if err := p.SetPushURL(ctx, creds.EnterpriseID, pushURL); err != nil {
		t.Fatal(err)
	}
	prefix := "ex" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if _, err := p.Import(ctx, creds.EnterpriseID, strings.ReplaceAll(twoRecordings, "%s", prefix)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitForDeliveries(ctx, creds.EnterpriseID, 3, ofPrefix(prefix), "confirmed"); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteRecording(ctx, creds.EnterpriseID, prefix+"_audio"); err != nil {
		t.Fatal(err)
	}
	deletion := func(d platformtest.Delivery) bool { return d.EventType == earshot.EventDeleted }
	if _, err := p.WaitForDeliveries(ctx, creds.EnterpriseID, 1, deletion, "confirmed"); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, `SELECT audio_id, title, deleted FROM earshot_recordings ORDER BY audio_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var audioID, title string
		var deleted bool
		if err := rows.Scan(&audioID, &title, &deleted); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimPrefix(audioID, prefix)+" "+title+" "+strconv.FormatBool(deleted))
	}
	if strings.Join(got, ", ") != "_audio  true, _both Interview false" {
		t.Fatalf("stored: %v", got)
	}
	stopExample(t, example, pushURL)
}

// stopExample sends SIGTERM to the receiver: it exits 0 and its port is free.
func stopExample(t *testing.T, example *exec.Cmd, pushURL string) {
	t.Helper()
	if err := example.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := example.Wait(); err != nil {
		t.Fatalf("the receiver exited with %v after SIGTERM", err)
	}
	if listener, err := net.Listen("tcp", strings.TrimSuffix(strings.TrimPrefix(pushURL, "http://"), earshot.DefaultPushPath)); err != nil {
		t.Fatalf("the receiver's port is still taken: %v", err)
	} else {
		listener.Close()
	}
}

// The platform's receiver check against the README's receiver passes, and leaves its table empty.
func TestReceiverExampleStoresNothingOfTheCheck(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	p := testPlatform(t)
	db, dbURL := testDB(t)
	creds, err := p.CreateEnterprise(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	pushURL, _ := startExample(ctx, t, p, dbURL, creds)
	report, err := p.CheckReceiver(ctx, creds.EnterpriseID, pushURL, 30)
	if err != nil {
		t.Fatal(err)
	}
	if !report.Passed {
		t.Fatalf("the check failed: %+v", report)
	}
	var stored int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM earshot_recordings`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Fatalf("the check left %d rows in the example's recordings table", stored)
	}
}

// startExample builds and starts the README's receiver on the database, and returns its push URL once
// it printed that it listens; the process is killed when the test ends, unless stopped before.
func startExample(ctx context.Context, t *testing.T, p *platformtest.Platform, dbURL string,
	creds platformtest.Credentials) (string, *exec.Cmd) {
	t.Helper()
	binary := buildBinary(ctx, t, "./examples/receiver")
	address := freeAddress(t)
	example := exec.Command(binary)
	example.Env = append(kitEnv(dbURL, p, creds), "LISTEN_ADDR="+address)
	example.Stderr = os.Stderr
	stdout, err := example.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := example.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if example.ProcessState == nil {
			_ = example.Process.Kill()
			_ = example.Wait()
		}
	})
	pushURL := "http://" + address + earshot.DefaultPushPath
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "listening on "+pushURL {
		t.Fatalf("the receiver printed %q", lines.Text())
	}
	go func() {
		for lines.Scan() {
			fmt.Fprintln(os.Stderr, lines.Text())
		}
	}()
	return pushURL, example
}

func freeAddress(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	return listener.Addr().String()
}
