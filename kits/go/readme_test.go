package earshot

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// The README's Go code is the examples' code, as the tests run it.
func TestReadmeCodeIsTheExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	files := []string{"examples/quickstart/main.go", "pgtest/examples/receiver/main.go"}
	if len(blocks) != len(files) {
		t.Fatalf("the README has %d Go blocks, want %d", len(blocks), len(files))
	}
	for i, file := range files {
		code, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if blocks[i][1] != string(code) {
			t.Errorf("the README's Go block %d is not %s", i+1, file)
		}
	}
	quickstart := strings.Count(blocks[0][1], "\n")
	if quickstart > 30 {
		t.Errorf("the quick start has %d lines", quickstart)
	}
}

func TestQuickstartRunsAgainstThePlatform(t *testing.T) {
	ctx := testContext(t, 40*time.Second)
	p := testPlatform(t)
	prefix := "qs" + strings.ReplaceAll(newEventID()[:8], "-", "")
	_, creds, _ := newEnterprise(t, ctx, p, recordingsJSONL(prefix, 3))
	run := exec.CommandContext(ctx, "go", "run", "./examples/quickstart")
	run.Env = append(os.Environ(), "EARSHOT_BASE_URL="+p.PartnerURL,
		"EARSHOT_ENTERPRISE_ID="+strconv.FormatInt(creds.EnterpriseID, 10),
		"EARSHOT_KEY_VERSION="+strconv.Itoa(creds.KeyVersion), "EARSHOT_SECRET="+creds.Secret)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	want := prefix + "_02  DEV-A  Recording 2\n" + prefix + "_01  DEV-B  Recording 1\n" + prefix + "_00  DEV-A  Recording 0\n"
	if string(out) != want {
		t.Fatalf("the quick start printed\n%s\nwant\n%s", out, want)
	}
}
