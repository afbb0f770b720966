package platformtests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
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
	run := exec.CommandContext(ctx, "go", "run", "./examples/quickstart")
	run.Dir = kitDir
	run.Env = append(environWithout("EARSHOT_KEY_VERSION"), "EARSHOT_BASE_URL="+p.PartnerURL,
		"EARSHOT_ENTERPRISE_ID="+strconv.FormatInt(creds.EnterpriseID, 10), "EARSHOT_SECRET="+creds.Secret)
	out, err := run.CombinedOutput()
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
	run := exec.CommandContext(ctx, "go", "run", "./examples/download", s.audioID, path)
	run.Dir = kitDir
	run.Env = append(environWithout("EARSHOT_KEY_VERSION"), "EARSHOT_BASE_URL="+p.PartnerURL,
		"EARSHOT_ENTERPRISE_ID="+strconv.FormatInt(s.creds.EnterpriseID, 10), "EARSHOT_SECRET="+s.creds.Secret)
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sha256 "+sha256Hex(s.audio)) {
		t.Fatalf("go run: %v\n%s", err, out)
	}
}

func environWithout(names ...string) []string {
	var env []string
	for _, entry := range os.Environ() {
		keep := true
		for _, name := range names {
			keep = keep && !strings.HasPrefix(entry, name+"=")
		}
		if keep {
			env = append(env, entry)
		}
	}
	return env
}
