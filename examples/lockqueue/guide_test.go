package lockqueue_test

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
	"github.com/pmlin/pmlin/examples/lockqueue"
	"github.com/pmlin/pmlin/target"
)

// TestGuide keeps docs/your-primitive.md's "Testing your own data
// structure", and the README's lines on it, true: every Go block is in the
// file the text before it names, and every queuepmlin command runs (in
// process, in a temporary directory) with the exit status its comment
// gives.
func TestGuide(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // fuzz keeps its files under ./pmlin-out
	ran := map[string]bool{}
	for _, doc := range []struct {
		file, section    string
		blocks, commands int // at least
	}{
		{"docs/your-primitive.md", "## Testing your own data structure", 2, 3},
		{"README.md", "## Test your own primitive", 0, 1},
	} {
		b, err := os.ReadFile(filepath.Join(root, doc.file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		i := strings.Index(text, "\n"+doc.section+"\n")
		if i < 0 {
			t.Fatalf("%s has no section %q", doc.file, doc.section)
		}
		text = text[i+len(doc.section)+2:]
		if j := strings.Index(text, "\n## "); j >= 0 {
			text = text[:j]
		}
		blocks, commands := checkGuide(t, root, text, ran)
		if blocks < doc.blocks || commands < doc.commands {
			t.Errorf("%s: %d Go blocks and %d commands checked, want at least %d and %d: the guide lost its code?", doc.file, blocks, commands, doc.blocks, doc.commands)
		}
	}
}

// checkGuide checks text's Go blocks and runs its queuepmlin commands (a
// command in ran ran already, and is counted, not run again).
func checkGuide(t *testing.T, root, text string, ran map[string]bool) (blocks, commands int) {
	t.Helper()
	fileRef := regexp.MustCompile("`(examples/[^`]+\\.go)`")
	exitComment := regexp.MustCompile(`#\s*exit (\d+)\s*$`)
	const prefix = "go run ./examples/lockqueue/cmd/queuepmlin "
	var file, lang string
	var block []string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case lang == "" && strings.HasPrefix(line, "```"):
			lang, block = strings.TrimPrefix(line, "```"), nil
		case lang != "" && line == "```":
			switch lang {
			case "go":
				blocks++
				src, err := os.ReadFile(filepath.Join(root, file))
				if err != nil || !strings.Contains(string(src), strings.Join(block, "\n")) {
					t.Errorf("a Go block is not in %q (%v):\n%s", file, err, strings.Join(block, "\n"))
				}
			case "sh":
				for _, cmd := range block {
					if !strings.HasPrefix(cmd, prefix) {
						continue
					}
					commands++
					m := exitComment.FindStringSubmatch(cmd)
					if m == nil {
						t.Fatalf("%q says no exit status (# exit N)", cmd)
					}
					if ran[cmd] {
						continue
					}
					ran[cmd] = true
					want, _ := strconv.Atoi(m[1])
					args := strings.Fields(strings.TrimPrefix(cmd[:len(cmd)-len(m[0])], prefix))
					var out, errs bytes.Buffer
					c := cli.Command{Name: "queuepmlin", Targets: []*target.Target{lockqueue.Target()}, Stdout: &out, Stderr: &errs}
					if got := c.Run(context.Background(), args); got != want {
						t.Errorf("%s: exit %d, want %d\n%s%s", cmd, got, want, out.String(), errs.String())
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
	return blocks, commands
}
