package analyzer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/shrink"
)

// crashMutants are the planted bugs of the built-in PMwCAS that only a
// crash exposes; testdata/crashes holds, for each, the shrunk history
// pmlin fuzz kept (its header says how it was made).
var crashMutants = []string{"descriptor-unflushed", "phase2-unflushed", "read-dirty-unpersisted", "recovery-skips-rdcss",
	"recovery-wrong-way", "status-unpersisted", "words-unpersisted"}

// TestCrashStories: each crash bug's shrunk history fails, its first
// anomaly tells the crash story (the crash line, the read after it that
// shows what recovery left), names the lines of the original history,
// and the text and JSON reports match their golden files. The exact
// checker agrees.
func TestCrashStories(t *testing.T) {
	files, err := filepath.Glob("testdata/crashes/*.hist")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(crashMutants) {
		t.Errorf("%d files in testdata/crashes, %d crash mutants", len(files), len(crashMutants))
	}
	for _, m := range crashMutants {
		t.Run(m, func(t *testing.T) {
			path := filepath.Join("testdata", "crashes", m+".hist")
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r, origin := shrink.Origins(bytes.NewReader(in))
			a, err := analyzer.Analyze(context.Background(), history.NewReader(r, "crashes/"+m+".hist", history.Options{}), analyzer.Options{Origin: origin})
			if err != nil {
				t.Fatal(err)
			}
			res := a.Result
			if res.Linearizable || len(res.Anomalies) == 0 {
				t.Fatal("the crash bug's history is linearizable")
			}
			an := res.Anomalies[0]
			checkStory(t, in, an)
			if len(an.OriginalOps) != len(an.Ops) || slices.Contains(an.OriginalOps, 0) {
				t.Errorf("original lines %v for operations %v", an.OriginalOps, an.Ops)
			}
			h, err := history.ReadAll(bytes.NewReader(in), m)
			if err != nil {
				t.Fatal(err)
			}
			if ex, err := exact.Check(context.Background(), h, exact.Options{}); err != nil || ex.Linearizable {
				t.Errorf("the exact checker: %v %+v", err, ex)
			}
			goldenReport(t, "crashes/"+m+".hist", res, filepath.Join("testdata", "crashes", m+".strict.golden"))
		})
	}
}

// checkStory checks an anomaly's crash story against the history's text:
// its crashes are crash lines, its evidence cites one of them and a read
// after it (a read of the history) and says what that read returned, and
// its explanation says so too.
func checkStory(t *testing.T, text []byte, an analyzer.Anomaly) {
	t.Helper()
	lines := strings.Split(string(text), "\n")
	isLine := func(l int64, pred func(string) bool) bool {
		return l >= 1 && int(l) <= len(lines) && pred(strings.TrimSpace(strings.SplitN(lines[l-1], "#", 2)[0]))
	}
	if len(an.Crashes) == 0 {
		t.Fatalf("anomaly %s names no crash: %s", an.Kind, an.Explanation)
	}
	for _, c := range an.Crashes {
		if !isLine(c, func(s string) bool { return s == "crash" }) {
			t.Errorf("crash %d is not a crash line", c)
		}
	}
	found := false
	for _, ev := range an.Evidence {
		if ev.Kind != analyzer.EvidenceRecovery || !slices.Contains(an.Crashes, ev.Crash) {
			continue
		}
		for _, v := range ev.Values {
			if !isLine(v.Read, func(s string) bool { return strings.Contains(s, " inv read ") }) || v.Read < ev.Crash {
				t.Errorf("value %+v: line %d is not a read after the crash at line %d", v, v.Read, ev.Crash)
			}
			found = true
		}
		if !strings.Contains(ev.Reason, "crash at line") || !strings.Contains(an.Explanation, ev.Reason) {
			t.Errorf("evidence %q is not said", ev.Reason)
		}
	}
	if !found {
		t.Errorf("no evidence cites the read after the crash: %+v", an.Evidence)
	}
}

// TestSwapForks: the forks the planted bug swap-stale-old makes, as pmlin
// fuzz found and shrank them (testdata/swaps), are forks in every mode
// (no crash), between operations that include a swap, explained as such
// (a swap always takes effect: it is a returned value that is wrong),
// named by their lines in the run's history; the exact checker agrees,
// and the reports match their golden files.
func TestSwapForks(t *testing.T) {
	files, err := filepath.Glob("testdata/swaps/*.hist")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".hist")
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h, err := history.ReadAll(bytes.NewReader(in), name)
		if err != nil {
			t.Fatal(err)
		}
		if ex, err := exact.Check(context.Background(), h, exact.Options{}); err != nil || ex.Linearizable {
			t.Errorf("%s: the exact checker: %v %+v", name, err, ex)
		}
		for _, mode := range []history.Mode{history.Strict, history.Recoverable, history.Durable} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				r, origin := shrink.Origins(bytes.NewReader(in))
				a, err := analyzer.Analyze(context.Background(), history.NewReader(r, "swaps/"+name+".hist", history.Options{}), analyzer.Options{Mode: mode, Origin: origin})
				if err != nil {
					t.Fatal(err)
				}
				res := a.Result
				if res.Linearizable || len(res.Anomalies) == 0 || res.Anomalies[0].Kind != analyzer.Fork {
					t.Fatalf("want a fork first: %+v", res.Anomalies)
				}
				an := res.Anomalies[0]
				if !strings.Contains(an.Summary, "swap) and") && !strings.Contains(an.Summary, "swap) both") {
					t.Errorf("no swap among the fork's operations: %s", an.Summary)
				}
				if !strings.Contains(an.Summary, "the swap returned a value it did not replace") && !strings.Contains(an.Summary, "the other returned a value it did not replace") {
					t.Errorf("the fork is not explained as a swap's: %s", an.Summary)
				}
				if len(an.OriginalOps) != len(an.Ops) || slices.Contains(an.OriginalOps, 0) {
					t.Errorf("original lines %v for operations %v", an.OriginalOps, an.Ops)
				}
				goldenReport(t, "swaps/"+name+".hist", res, filepath.Join("testdata", "swaps", name+"."+mode.String()+".golden"))
			})
		}
	}
}
