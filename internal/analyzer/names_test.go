package analyzer_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
)

// tagNamer names every event by a tag of its line, so that a sentence
// that names an event without it shows.
type tagNamer struct{}

func (tagNamer) Op(line int64) string       { return fmt.Sprintf("OP<%d>", line) }
func (tagNamer) Returned(line int64) string { return fmt.Sprintf("at RET<%d>", line) }
func (tagNamer) Crashes(lines ...int64) string {
	return fmt.Sprintf("CRASHES<%v>", lines)
}
func (tagNamer) OpList(lines []int64) string    { return fmt.Sprintf("OPS<%v>", lines) }
func (tagNamer) CrashList(lines []int64) string { return fmt.Sprintf("CRASHLIST<%v>", lines) }
func (tagNamer) Order() analyzer.Order {
	return analyzer.Order{Name: "ORDER", Blocks: "BLOCKS", Fix: "FIX"}
}

// TestNamerNamesEveryEvent: with Options.Names, no sentence of any
// anomaly of the testdata's histories, in any mode, names a line itself
// (every "line N" goes through the Namer), the operations are named as
// the Namer says, and without it the sentences are as before: the Namer's
// words for lines.
func TestNamerNamesEveryEvent(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "*.hist"))
	if err != nil || len(paths) < 10 {
		t.Fatalf("%d histories: %v", len(paths), err)
	}
	lineWord := regexp.MustCompile(`\blines? \d`)
	anomalies := 0
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []history.Mode{history.Strict, history.Recoverable, history.Durable} {
			check := func(names analyzer.Namer) *analyzer.Result {
				res, err := analyzer.Check(context.Background(), history.NewReader(bytes.NewReader(text), p, history.Options{}), analyzer.Options{Mode: mode, Names: names})
				if err != nil {
					return nil
				}
				return res
			}
			tagged, plain := check(tagNamer{}), check(nil)
			if tagged == nil || plain == nil {
				continue
			}
			for k, a := range tagged.Anomalies {
				anomalies++
				sentences := []string{a.Explanation, a.Summary}
				for _, e := range a.Edges {
					sentences = append(sentences, e.Reason)
				}
				for _, e := range a.Evidence {
					sentences = append(sentences, e.Reason)
				}
				for _, s := range a.Staleness {
					sentences = append(sentences, s.Reason)
				}
				for _, s := range sentences {
					if m := lineWord.FindString(s); m != "" {
						t.Errorf("%s %v: %q names a line itself: %s", p, mode, m, s)
					}
				}
				for _, l := range a.Ops {
					if !strings.Contains(a.Explanation, fmt.Sprintf("OP<%d>", l)) {
						t.Errorf("%s %v: operation of line %d not named: %s", p, mode, l, a.Explanation)
					}
				}
				if want := untag(a.Explanation); want != plain.Anomalies[k].Explanation {
					t.Errorf("%s %v: the line namer's sentence differs:\n%s\n%s", p, mode, plain.Anomalies[k].Explanation, want)
				}
			}
		}
	}
	if anomalies < 50 {
		t.Fatalf("only %d anomalies", anomalies)
	}
}

// untag turns tagNamer's words into the line namer's.
func untag(s string) string {
	s = regexp.MustCompile(`OP<(\d+)>`).ReplaceAllString(s, "line $1")
	s = regexp.MustCompile(`RET<(\d+)>`).ReplaceAllString(s, "line $1")
	return regexp.MustCompile(`CRASHES<\[([\d ]+)\]>`).ReplaceAllStringFunc(s, func(m string) string {
		lines := strings.Fields(regexp.MustCompile(`CRASHES<\[([\d ]+)\]>`).FindStringSubmatch(m)[1])
		if len(lines) == 1 {
			return "the crash at line " + lines[0]
		}
		return "the crashes at lines " + strings.Join(lines[:len(lines)-1], ", ") + " and " + lines[len(lines)-1]
	})
}

// TestRecorderHintTerms: the hint speaks the namer's terms for the order
// of the steps, and none of a history file's.
func TestRecorderHintTerms(t *testing.T) {
	pairs := []analyzer.ObservedBeforeWritten{{Reader: 3, Writer: 5, Word: 7}}
	h := analyzer.RecorderHint(tagNamer{}, pairs, true)
	for _, w := range []string{"OP<3> observed at address 7 the value that OP<5> wrote", "so ORDER is not", "real-time order. BLOCKS FIX", "FIX (recorders/README.md"} {
		if !strings.Contains(h, w) {
			t.Errorf("%q lacks %q", h, w)
		}
	}
	if strings.Contains(h, "line") || strings.Contains(h, "merge") {
		t.Errorf("%q speaks of lines or merges", h)
	}
	cli := analyzer.RecorderHint(nil, pairs, true)
	for _, w := range []string{"so the line order of this history is not", "per-thread logs concatenated, not merged (between crashes, each process's steps form one block): merge them by timestamp (pmlin merge). Check", "Check your merge or clock"} {
		if !strings.Contains(cli, w) {
			t.Errorf("%q lacks %q", cli, w)
		}
	}
}
