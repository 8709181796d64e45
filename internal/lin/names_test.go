package lin_test

import (
	"context"
	"fmt"
	"github.com/pmlin/pmlin/internal/analyzer"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/model"
)

// tagNamer names every event by a tag with its line, so that a sentence
// shows which of its names went through the Namer.
type tagNamer struct{}

func (tagNamer) Op(line int64) string       { return fmt.Sprintf("«op %d»", line) }
func (tagNamer) Returned(line int64) string { return fmt.Sprintf("«op %d»", line) }
func (tagNamer) Crashes(lines ...int64) string {
	return fmt.Sprintf("«crash %d»", lines[0])
}
func (tagNamer) OpList(lines []int64) string    { return fmt.Sprint(lines) }
func (tagNamer) CrashList(lines []int64) string { return fmt.Sprint(lines) }
func (tagNamer) Order() analyzer.Order          { return analyzer.Order{} }

// sentences are everything a check says in words: each object's reason,
// explanation (its sentence, where each operation is) and stuck
// operations, or the error.
func sentences(res *lin.Result, err error) []string {
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, o := range res.Objects {
		out = append(out, o.Reason)
		if x := o.Explanation; x != nil {
			out = append(out, x.Sentence, x.Failing.At())
			for _, refs := range [][]lin.OpRef{x.Ops, x.Prefix, x.Origins} {
				for _, r := range refs {
					out = append(out, r.At())
				}
			}
		}
		for _, st := range o.Stuck {
			out = append(out, st.Sentence, st.Op.At(), st.Partner.At())
		}
	}
	return out
}

// TestNamerNamesEveryEvent: every sentence of a check of the version 2
// testdata (every mode, every engine) names its operations and crashes
// through Options.Names when it is set, and nowhere by a line: with a
// tagging Namer, no line is named, and the tags are where the line
// namer's sentence names lines, with the same numbers.
func TestNamerNamesEveryEvent(t *testing.T) {
	files, _ := filepath.Glob("../history/testdata/v2/*.hist")
	more, _ := filepath.Glob("../../examples/v2/*.hist")
	files = append(files, more...)
	if len(files) < 20 {
		t.Fatalf("only %d histories", len(files))
	}
	// And the sentences the testdata does not reach: a value dequeued
	// twice (the queue engine), a two-step form undecided and stuck
	// (sync_test.go).
	extra := map[string]string{
		"twice.hist":   "pmlin-history v2\nobject q queue\n1 inv q enq 1\n1 ret ok\n2 inv q deq\n2 ret 1\n3 inv q deq\n3 ret 1\n",
		"unsure.hist":  "pmlin-history v2\nobject x channel\n0 inv x send 2\n1 inv x send 1\ncrash\n1 inv x send 3\ncrash\n1 inv x send 1\n0 inv x recv\ncrash\n1 inv x recv\n1 ret ?\n1 inv x recv\n1 ret 3\n0 inv x send 3\n0 ret fail\n",
		"stuck2.hist":  "pmlin-history v2\nobject x exchanger\n1 inv x exchange 1\ncrash\n1 inv x exchange 2\n2 inv x exchange 3\n1 ret 3\n2 ret 2\n4 inv x exchange 7\n5 inv x exchange 8\n6 inv x exchange 5\n7 inv x exchange 6\n6 ret 6\n",
		"removed.hist": "pmlin-history v2\nobject m map\n1 inv m put 7 100\n1 ret nil\n1 inv m remove 7\n1 ret 100\n2 inv m get 7\n2 ret 100\n",
	}
	for name := range extra {
		files = append(files, name)
	}
	tagged := 0
	for _, f := range files {
		text, err := []byte(extra[f]), error(nil)
		if extra[f] == "" {
			if text, err = os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
		h, err := history.ReadV2(strings.NewReader(string(text)), f)
		if err != nil {
			continue // not a history of objects alone (a version 1 words file)
		}
		for _, mode := range []history.Mode{history.Strict, history.Recoverable, history.Durable} {
			for _, engine := range []string{lin.EngineExact, lin.EngineQueue, lin.EngineUnique} {
				tagged += sameNames(t, f, h, lin.Options{Mode: mode, Engine: engine})
			}
		}
	}
	// A queue too large for the search to explain: the queue engine's
	// own sentences, a value dequeued twice (enqueued by whom) and one
	// never enqueued.
	for _, twice := range []bool{true, false} {
		h := genUniqueQueue(rand.New(rand.NewPCG(5, 34)), 3000, 4, 0.5, 0, 0)
		var deqs []int
		for i := range h.Ops {
			if h.Ops[i].Name == "deq" && h.Ops[i].Results[0].Sym == model.Num {
				deqs = append(deqs, i)
			}
		}
		for i := range h.Ops { // lines, as if read from a file, for the Namer to name
			h.Ops[i].Line = int64(2 + i)
		}
		last := deqs[len(deqs)-1]
		h.Ops[last].Results[0] = model.Number(1 << 40)
		if twice {
			h.Ops[last].Results[0] = h.Ops[deqs[0]].Results[0]
		}
		tagged += sameNames(t, fmt.Sprintf("large queue (twice %v)", twice), h, lin.Options{})
	}
	if tagged < 100 {
		t.Errorf("only %d events named through the Namer", tagged)
	}
	t.Logf("%d events named through the Namer", tagged)
}

var tags = regexp.MustCompile(`«(?:op|crash) (\d+)»`)

// sameNames checks h with opt and the tagging Namer: its sentences name
// no line, and their tags are where the line namer's sentences name lines;
// it returns the tags.
func sameNames(t *testing.T, f string, h *model.History, opt lin.Options) (tagged int) {
	t.Helper()
	// pmlin check's names: "line 7", "FILE:7", "the crash at FILE:7".
	file := "line "
	if h.Name != "" {
		file += "|" + regexp.QuoteMeta(h.Name) + ":"
	}
	lines := regexp.MustCompile(`(?:the crash at )?(?:` + file + `)(\d+)`)
	// The parts of an object run at once: a retry when the two runs'
	// first failing part differs.
	var want, got []string
	for try := 0; try < 3; try++ {
		res, err := lin.Check(context.Background(), h, opt)
		want = sentences(res, err)
		topt := opt
		topt.Names = tagNamer{}
		res, err = lin.Check(context.Background(), h, topt)
		got = sentences(res, err)
		if lines.ReplaceAllString(strings.Join(want, "\n"), "«$1»") == tags.ReplaceAllString(strings.Join(got, "\n"), "«$1»") {
			break
		}
	}
	if len(want) != len(got) {
		t.Fatalf("%s %v %s: %d sentences, %d with the Namer", f, opt.Mode, opt.Engine, len(want), len(got))
	}
	for k := range want {
		if l := lines.FindString(got[k]); l != "" {
			t.Errorf("%s %v %s: names %q: %s", f, opt.Mode, opt.Engine, l, got[k])
		}
		if w, g := lines.ReplaceAllString(want[k], "«$1»"), tags.ReplaceAllString(got[k], "«$1»"); w != g {
			t.Errorf("%s %v %s:\n  lines: %s\n  Namer: %s", f, opt.Mode, opt.Engine, want[k], got[k])
		}
		tagged += len(tags.FindAllString(got[k], -1))
	}
	return tagged
}
