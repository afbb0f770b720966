package platformtests

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
	"github.com/earshot/earshot/kits/go/platformtests/platformtest"
)

// The kit's folder, where its examples are run from as the README runs them.
const kitDir = ".."

func TestQuickstartRunsAgainstThePlatform(t *testing.T) {
	ctx := testContext(t, 40*time.Second)
	p := testPlatform(t)
	prefix := "qs" + uniqueID()
	_, creds, _ := newEnterprise(t, ctx, p, recordingsJSONL(prefix, 3))
	if creds.KeyVersion != earshot.DefaultKeyVersion {
		t.Fatalf("a new enterprise's key version is %d", creds.KeyVersion)
	}
	out, err := runExample(ctx, p, creds, "./examples/quickstart")
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	want := prefix + "_02  DEV-A  Recording 2\n" + prefix + "_01  DEV-B  Recording 1\n" + prefix + "_00  DEV-A  Recording 0\n"
	if string(out) != want {
		t.Fatalf("the quick start printed\n%s\nwant\n%s", out, want)
	}
}

// The README's download example prints the SHA-256 of the audio stored.
func TestDownloadExampleRunsAgainstThePlatform(t *testing.T) {
	ctx := testContext(t, 40*time.Second)
	p := testPlatform(t)
	s := storedAudio(t, ctx, p, 100_000)
	path := filepath.Join(t.TempDir(), "hello.wav")
	out, err := runExample(ctx, p, s.creds, "./examples/download", s.audioID, path)
	if err != nil || !strings.Contains(string(out), "sha256 "+sha256Hex(s.audio)) {
		t.Fatalf("go run: %v\n%s", err, out)
	}
}

// runExample runs one of the kit's examples as the README does, with the credentials in the environment
// and EARSHOT_KEY_VERSION left to its default.
func runExample(ctx context.Context, p *platformtest.Platform, creds platformtest.Credentials, args ...string) ([]byte, error) {
	run := exec.CommandContext(ctx, "go", append([]string{"run"}, args...)...)
	run.Dir = kitDir
	run.Env = append(platformtest.EnvironWithout("EARSHOT_KEY_VERSION="), "EARSHOT_BASE_URL="+p.PartnerURL,
		"EARSHOT_ENTERPRISE_ID="+strconv.FormatInt(creds.EnterpriseID, 10), "EARSHOT_SECRET="+creds.Secret)
	return run.CombinedOutput()
}
