package shadow_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/examples/shadow"
	"github.com/pmlin/pmlin/target"
)

// TestReadmeGuide keeps the README's "Test your own primitive" true: every
// Go block is in the file the text before it names, and every shadowpmlin
// command runs (in process, in a temporary directory) with the exit status
// its comment gives.
func TestReadmeGuide(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(readme)
	i := strings.Index(sec, "\n## Test your own primitive\n")
	if i < 0 {
		t.Fatal(`README.md has no section "## Test your own primitive"`)
	}
	sec = sec[i+1:]
	if j := strings.Index(sec[3:], "\n## "); j >= 0 {
		sec = sec[:j+3]
	}
	fileRef := regexp.MustCompile("`(examples/[^`]+\\.go)`")
	exitComment := regexp.MustCompile(`#\s*exit (\d+)\s*$`)
	const prefix = "go run ./examples/shadow/cmd/shadowpmlin "
	var file, lang string
	var block []string
	blocks, commands := 0, 0
	t.Chdir(t.TempDir()) // fuzz keeps its files under ./pmlin-out
	for _, line := range strings.Split(sec, "\n") {
		switch {
		case lang == "" && strings.HasPrefix(line, "```"):
			lang, block = strings.TrimPrefix(line, "```"), nil
		case lang != "" && line == "```":
			switch lang {
			case "go":
				blocks++
				checkInFile(t, root, file, strings.Join(block, "\n"))
			case "sh":
				for _, cmd := range block {
					if !strings.HasPrefix(cmd, prefix) {
						continue
					}
					commands++
					m := exitComment.FindStringSubmatch(cmd)
					if m == nil {
						t.Fatalf("README: %q says no exit status (# exit N)", cmd)
					}
					want, _ := strconv.Atoi(m[1])
					args := strings.Fields(strings.TrimPrefix(cmd[:len(cmd)-len(m[0])], prefix))
					var out, errs bytes.Buffer
					c := cli.Command{Name: "shadowpmlin", Targets: []*target.Target{shadow.Target()}, Stdout: &out, Stderr: &errs}
					if got := c.Run(context.Background(), args); got != want {
						t.Errorf("README: %s: exit %d, want %d\n%s%s", cmd, got, want, out.String(), errs.String())
					}
				}
			}
			lang = ""
		case lang != "":
			block = append(block, line)
		default:
			if m := fileRef.FindAllStringSubmatch(line, -1); m != nil {
				file = m[len(m)-1][1]
			}
		}
	}
	if blocks < 5 || commands < 3 {
		t.Fatalf("README: %d Go blocks and %d commands checked; the section lost its code?", blocks, commands)
	}
}

// checkInFile fails t unless block is part of the file named (relative to
// root).
func checkInFile(t *testing.T, root, file, block string) {
	t.Helper()
	if file == "" {
		t.Fatalf("README: a Go block names no file before it:\n%s", block)
	}
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	if !strings.Contains(string(b), block) {
		t.Errorf("README: this block is not in %s:\n%s", file, block)
	}
}
