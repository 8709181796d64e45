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

// TestReadmeGuide keeps the guide to a target of one's own true, in
// docs/your-primitive.md and in the README's summary of it ("## Test your
// own primitive"): every Go block is in the file the text before it names,
// and every shadowpmlin command runs (in process, in a temporary directory)
// with the exit status its comment gives.
func TestReadmeGuide(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())     // fuzz keeps its files under ./pmlin-out
	ran := map[string]bool{} // a command both documents show runs once
	for _, doc := range []struct {
		file, section    string // section "": the whole file
		blocks, commands int    // at least
	}{
		{"docs/your-primitive.md", "", 5, 3},
		{"README.md", "## Test your own primitive", 2, 2},
	} {
		b, err := os.ReadFile(filepath.Join(root, doc.file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if doc.section != "" {
			i := strings.Index(text, "\n"+doc.section+"\n")
			if i < 0 {
				t.Fatalf("%s has no section %q", doc.file, doc.section)
			}
			text = text[i+1:]
			if j := strings.Index(text[3:], "\n## "); j >= 0 {
				text = text[:j+3]
			}
		}
		blocks, commands := checkGuide(t, root, doc.file, text, ran)
		if blocks < doc.blocks || commands < doc.commands {
			t.Errorf("%s: %d Go blocks and %d commands checked, want at least %d and %d; the guide lost its code?", doc.file, blocks, commands, doc.blocks, doc.commands)
		}
	}
}

// checkGuide checks the Go blocks and runs the shadowpmlin commands of text,
// from the document name, and counts them; a command in ran was run for
// another document with the same expectation, and is not run again.
func checkGuide(t *testing.T, root, name, text string, ran map[string]bool) (blocks, commands int) {
	t.Helper()
	fileRef := regexp.MustCompile("`(examples/[^`]+\\.go)`")
	exitComment := regexp.MustCompile(`#\s*exit (\d+)\s*$`)
	const prefix = "go run ./examples/shadow/cmd/shadowpmlin "
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
				checkInFile(t, root, name, file, strings.Join(block, "\n"))
			case "sh":
				for _, cmd := range block {
					if !strings.HasPrefix(cmd, prefix) {
						continue
					}
					commands++
					m := exitComment.FindStringSubmatch(cmd)
					if m == nil {
						t.Fatalf("%s: %q says no exit status (# exit N)", name, cmd)
					}
					key := strings.Join(strings.Fields(cmd), " ")
					if ran[key] {
						continue
					}
					ran[key] = true
					want, _ := strconv.Atoi(m[1])
					args := strings.Fields(strings.TrimPrefix(cmd[:len(cmd)-len(m[0])], prefix))
					var out, errs bytes.Buffer
					c := cli.Command{Name: "shadowpmlin", Targets: []*target.Target{shadow.Target()}, Stdout: &out, Stderr: &errs}
					if got := c.Run(context.Background(), args); got != want {
						t.Errorf("%s: %s: exit %d, want %d\n%s%s", name, cmd, got, want, out.String(), errs.String())
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

// checkInFile fails t unless block, from document doc, is part of the file
// named (relative to root).
func checkInFile(t *testing.T, root, doc, file, block string) {
	t.Helper()
	if file == "" {
		t.Fatalf("%s: a Go block names no file before it:\n%s", doc, block)
	}
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	if !strings.Contains(string(b), block) {
		t.Errorf("%s: this block is not in %s:\n%s", doc, file, block)
	}
}
