package earshot

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	goBlock     = regexp.MustCompile("(?s)```go\n(.*?)```")
	markedBlock = regexp.MustCompile("(?s)<!-- newcomer: (\\S+)(?: (\\S+))? -->\n+```\\w*\n(.*?)```")
	placeholder = regexp.MustCompile(`<the [^>]*>`)
)

// Where the README's go-file blocks are kept, as the tests build and run them.
var readmeFiles = map[string]string{
	"quickstart/main.go": "examples/quickstart/main.go",
	"receiver/main.go":   "pgtest/examples/receiver/main.go",
	"download/main.go":   "examples/download/main.go",
}

// Where Debian's golang-github-lib-pq-dev puts the driver the README's go-install block points at.
const libPQSource = "/usr/share/gocode/src/github.com/lib/pq"

type readmeBlock struct{ name, path, text string }

func readmeBlocks(t *testing.T) (string, []readmeBlock) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	for _, m := range markedBlock.FindAllStringSubmatch(string(readme), -1) {
		blocks = append(blocks, readmeBlock{m[1], m[2], m[3]})
	}
	return string(readme), blocks
}

// The README's programs are the examples' code, and any other Go in it a part of one of them.
func TestReadmeCodeIsTheExamples(t *testing.T) {
	readme, blocks := readmeBlocks(t)
	examples := map[string]string{}
	for path, file := range readmeFiles {
		code, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		examples[path] = string(code)
	}
	saved := 0
	for _, b := range blocks {
		if b.name == "go-file" {
			saved++
			if examples[b.path] != b.text {
				t.Errorf("the README's %s is not %s", b.path, readmeFiles[b.path])
			}
		}
	}
	if saved != len(readmeFiles) {
		t.Errorf("the README has %d go-file blocks, want %d", saved, len(readmeFiles))
	}
	for _, m := range goBlock.FindAllStringSubmatch(readme, -1) {
		if !strings.Contains(strings.Join(valuesOf(examples), "\n"), m[1]) {
			t.Errorf("the README's Go block is in no example:\n%s", m[1])
		}
	}
}

// The newcomer blocks come in the order they run, and name no placeholder but the two filled in.
func TestReadmeNewcomerBlocks(t *testing.T) {
	_, blocks := readmeBlocks(t)
	var names []string
	for _, b := range blocks {
		if b.name != "go-file" {
			names = append(names, b.name)
		}
		for _, p := range placeholder.FindAllString(b.text, -1) {
			if p != "<the printed secret>" && p != "<the API key you created>" {
				t.Errorf("%s: unknown placeholder %s", b.name, p)
			}
		}
	}
	if got := strings.Join(names, " "); got != "go-install go-quickstart go-receiver go-push go-download" {
		t.Errorf("the newcomer blocks are %s", got)
	}
}

// go-install and the go-file blocks, as printed, make a module that builds with no module proxy.
func TestReadmeModuleBuildsAsPrinted(t *testing.T) {
	if _, err := os.Stat(libPQSource); err != nil {
		t.Skip("no lib/pq at " + libPQSource + " (apt-get install golang-github-lib-pq-dev)")
	}
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, blocks := readmeBlocks(t)
	for _, b := range blocks {
		switch b.name {
		case "go-install":
			runIn(t, dir, "bash", "-e", "-c", strings.ReplaceAll(b.text, "/path/to/earshot", checkout))
		case "go-file":
			_ = os.MkdirAll(filepath.Join(dir, filepath.Dir(b.path)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, b.path), []byte(b.text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	runIn(t, dir, "go", "build", "./...")
}

func runIn(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(environWithout("GOFLAGS", "GOPROXY"), "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
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

func valuesOf(m map[string]string) []string {
	var values []string
	for _, v := range m {
		values = append(values, v)
	}
	return values
}
