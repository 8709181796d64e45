package shrink_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/shrink"
	"github.com/pmlin/pmlin/internal/testenv"
)

var shrinkSeeds = flag.Int("shrink.seeds", 0, "random histories TestShrinkRandom and TestShrinkCrashChains generate (default 300; 3000 with PMLIN_LONG=1)")

// shrinkCount is the number of random histories of the random shrink tests.
func shrinkCount() int { return testenv.Count(*shrinkSeeds, 300, 3000) }

func analyze(t *testing.T, text []byte, mode history.Mode) *analyzer.Analysis {
	t.Helper()
	a, err := analyzer.Analyze(context.Background(), history.NewReader(bytes.NewReader(text), "t.hist", history.Options{}), analyzer.Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func opener(text []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(text)), nil }
}

// failsAs reports whether h is accepted by the analyzer and not
// linearizable, with an anomaly of kind want that tells the story, and
// anomalies of the given kinds only.
func failsAs(h *history.History, mode history.Mode, kinds []analyzer.Kind, want analyzer.Kind, story shrink.Story) bool {
	res, err := analyzer.CheckHistory(context.Background(), h, analyzer.Options{Mode: mode})
	if err != nil || res.Linearizable || len(res.Anomalies) == 0 {
		return false
	}
	found := false
	for _, a := range res.Anomalies {
		if !slices.Contains(kinds, a.Kind) {
			return false
		}
		found = found || (a.Kind == want && story.Tells(a))
	}
	return found
}

func kindsOf(res *analyzer.Result) []analyzer.Kind {
	var ks []analyzer.Kind
	for _, a := range res.Anomalies {
		if !slices.Contains(ks, a.Kind) {
			ks = append(ks, a.Kind)
		}
	}
	return ks
}

// without is h without operation i (and renumbered event positions kept
// as they are: WriteTo only sorts by them).
func without(h *history.History, i int) *history.History {
	c := *h
	c.Ops = slices.Delete(slices.Clone(h.Ops), i, i+1)
	for k := range c.Ops {
		c.Ops[k].ID = k
	}
	return &c
}

// checkShrunk asserts that h fails with anomaly 0 of the original
// analysis' kind and crash story, and that removing any single operation
// makes it stop failing that way (1-minimality).
func checkShrunk(t *testing.T, h *history.History, mode history.Mode, orig *analyzer.Result) {
	t.Helper()
	checkShrunkAt(t, h, mode, orig, 0)
}

// checkShrunkAt is checkShrunk for anomaly k of the original analysis.
func checkShrunkAt(t *testing.T, h *history.History, mode history.Mode, orig *analyzer.Result, k int) {
	t.Helper()
	kinds, want, story := kindsOf(orig), orig.Anomalies[k].Kind, shrink.StoryOf(orig.Anomalies[k])
	if !failsAs(h, mode, kinds, want, story) {
		t.Fatalf("the shrunk history does not fail with a %s (story %+v):\n%s", want, story, histgen.Text(h))
	}
	for i := range h.Ops {
		if failsAs(without(h, i), mode, kinds, want, story) {
			t.Fatalf("not 1-minimal: still fails without op %d (line %d):\n%s", i, h.Ops[i].Line, histgen.Text(h))
		}
	}
}

func TestShrinkPlantedViolations(t *testing.T) {
	for _, v := range []histgen.Violation{histgen.PlantStaleRead, histgen.PlantTornRead, histgen.PlantLostWrite} {
		for _, mode := range []history.Mode{history.Strict, history.Durable} {
			t.Run(v.String()+"/"+mode.String(), func(t *testing.T) {
				text, st, err := histgen.Planted(20000, v, 11)
				if err != nil {
					t.Fatal(err)
				}
				a := analyze(t, text, mode)
				if a.Result.Linearizable {
					t.Skip("linearizable in this mode")
				}
				h, stats, err := shrink.Anomaly(context.Background(), a, "t.hist", opener(text), shrink.Options{Confirm: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%v: %d ops -> %d extracted -> %d (%d lines, %d checks, exact %s)", v, stats.Original, stats.Extracted, stats.Final, stats.Lines, stats.Checks, stats.Exact)
				if stats.Final > 20 || !stats.Minimal || stats.Exact != "agrees" {
					t.Fatalf("stats %+v", stats)
				}
				checkShrunk(t, h, mode, a.Result)
				// The planted operation survives with its original line.
				found := false
				for _, op := range h.Ops {
					found = found || op.Line == st.ViolationLine
				}
				if !found {
					t.Errorf("the planted operation (line %d) was shrunk away:\n%s", st.ViolationLine, histgen.Text(h))
				}
				// Written out, it parses and fails the same way.
				var buf bytes.Buffer
				if err := shrink.Write(&buf, h, []string{"test"}); err != nil {
					t.Fatal(err)
				}
				res, err := analyzer.Check(context.Background(), history.NewReader(bytes.NewReader(buf.Bytes()), "shrunk", history.Options{}), analyzer.Options{Mode: mode})
				if err != nil || res.Linearizable {
					t.Fatalf("written shrunk history: %v %+v\n%s", err, res, buf.String())
				}
			})
		}
	}
}

// TestShrinkRandom shrinks the violating small random histories of
// histgen and checks each result with the exact checker.
func TestShrinkRandom(t *testing.T) {
	n := shrinkCount()
	shrunk := 0
	for seed := uint64(1); seed <= uint64(n); seed++ {
		c := histgen.RandomCase(histgen.RandomSmallConfig(seed), seed)
		mode := c.Config.Mode
		text := histgen.Text(c.History)
		a, err := analyzer.Analyze(context.Background(), history.NewReader(bytes.NewReader(text), "r", history.Options{}), analyzer.Options{Mode: mode})
		if err != nil || a.Result.Linearizable {
			continue
		}
		h, st, err := shrink.Anomaly(context.Background(), a, "t.hist", opener(text), shrink.Options{Confirm: true})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if st.Exact != "agrees" {
			t.Fatalf("%v: exact checker %q on the shrunk history:\n%s", c, st.Exact, histgen.Text(h))
		}
		// The extraction around the anomaly must fail on its own: the
		// fallback to the whole history would hide what it misses.
		if st.Whole {
			t.Fatalf("%v: the extraction around the anomaly does not fail on its own:\n%s", c, text)
		}
		checkShrunk(t, h, mode, a.Result)
		if st.Final > st.Original {
			t.Fatalf("%v: grew: %+v", c, st)
		}
		shrunk++
	}
	if shrunk < n/5 {
		t.Fatalf("only %d of %d random histories violated", shrunk, n)
	}
	t.Logf("shrunk %d violating histories", shrunk)
}

// TestShrinkExtraction: every anomaly of the histories the extraction
// around an anomaly once missed an operation of shrinks, in every mode,
// from an extraction that fails on its own (not from the whole history),
// to a 1-minimal history the exact checker agrees with. The histories
// (seeds 816 and 8196 of TestShrinkRandom) are the analyzer's
// (TestSubHistory): an unreachable write whose chain lost a fork to a cas
// the extraction left out, and a cut-off swap whose observer was taken to
// be another cut-off swap placed after it.
func TestShrinkExtraction(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "analyzer", "testdata", "subhistory", "*.hist"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no histories: %v", err)
	}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []history.Mode{history.Strict, history.Durable, history.Recoverable} {
			t.Run(filepath.Base(file)+"/"+mode.String(), func(t *testing.T) {
				a := analyze(t, text, mode)
				for k, an := range a.Result.Anomalies {
					h, st, err := shrink.Anomaly(context.Background(), a, file, opener(text), shrink.Options{Anomaly: k, Confirm: true})
					if err != nil {
						t.Fatalf("anomaly %d (%s): %v", k, an.Kind, err)
					}
					if st.Whole || st.Extracted >= st.Original {
						t.Fatalf("anomaly %d (%s): the extraction did not fail on its own: %+v", k, an.Kind, st)
					}
					if st.Exact != "agrees" {
						t.Fatalf("anomaly %d (%s): exact checker %q on:\n%s", k, an.Kind, st.Exact, histgen.Text(h))
					}
					checkShrunkAt(t, h, mode, a.Result, k)
				}
			})
		}
	}
}

func TestMinimizeRefusesPassing(t *testing.T) {
	h := histgen.Small(histgen.DefaultSmall(), 1)
	_, _, err := shrink.Minimize(context.Background(), h, shrink.Options{})
	if !errors.Is(err, shrink.ErrNotFailing) {
		t.Fatalf("err %v", err)
	}
	a := analyze(t, histgen.Text(h), history.Strict)
	if _, _, err := shrink.Anomaly(context.Background(), a, "t.hist", opener(histgen.Text(h)), shrink.Options{}); !errors.Is(err, shrink.ErrNotFailing) {
		t.Fatalf("err %v", err)
	}
}

// TestShrinkKeepsCrashes: a cut-off cas whose effect a read saw needs its
// crash line; the strict-mode violation is about that crash.
func TestShrinkKeepsCrashes(t *testing.T) {
	text := []byte("1 inv read 3\n1 ret 0\n1 inv cas 10:0:0x100001\ncrash\n2 inv read 10\n2 ret 0\n2 inv read 10\n2 ret 0x100001\n3 inv read 3\n3 ret 0\n")
	a := analyze(t, text, history.Strict)
	if a.Result.Linearizable {
		t.Fatal("want a violation in strict mode")
	}
	h, _, err := shrink.Anomaly(context.Background(), a, "t.hist", opener(text), shrink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Crashes) != 1 || len(h.Ops) != 3 {
		t.Fatalf("want the cas, both reads and the crash:\n%s", histgen.Text(h))
	}
	checkShrunk(t, h, history.Strict, a.Result)
	r, err := exact.Check(context.Background(), h, exact.Options{Mode: history.Strict})
	if err != nil || r.Linearizable {
		t.Fatalf("exact: %v %+v", err, r)
	}
}

// TestShrinkFarBehind: a read 300 versions behind shrinks to the read and
// the write that replaced its value; the staleness figure says 300.
func TestShrinkFarBehind(t *testing.T) {
	var b bytes.Buffer
	w := history.NewWriter(&b)
	w.Header(0, nil)
	prev := uint64(0)
	for k := uint64(1); k <= 300; k++ {
		v := 1<<32 | k
		w.InvokeCAS(1, []uint64{4}, []uint64{prev}, []uint64{v})
		w.ReturnOK(1)
		prev = v
	}
	w.InvokeRead(2, []uint64{4})
	w.ReturnRead(2, []uint64{1<<32 | 1})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	text := b.Bytes()
	a := analyze(t, text, history.Strict)
	if len(a.Result.Anomalies) != 1 || len(a.Result.Anomalies[0].Staleness) != 1 || a.Result.Anomalies[0].Staleness[0].Behind != 299 {
		t.Fatalf("%+v", a.Result.Anomalies)
	}
	h, st, err := shrink.Anomaly(context.Background(), a, "t.hist", opener(text), shrink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Final != 2 || st.Extracted > 3 {
		t.Fatalf("%+v\n%s", st, histgen.Text(h))
	}
	checkShrunk(t, h, history.Strict, a.Result)
}

// TestShrinkCrashChains shrinks violations of tiny crash-heavy histories
// (histgen.CrashChainConfig) and of internal/analyzer/testdata/chains in their modes: the
// result must still fail, be 1-minimal, and the exact checker must agree
// on the in-memory result (a shrunk history whose operation lost its own
// crash but not a later one once said "pending at the end" in memory while
// its text said "cut off").
func TestShrinkCrashChains(t *testing.T) {
	n := shrinkCount()
	type input struct {
		name string
		text []byte
		mode history.Mode
	}
	var inputs []input
	files, _ := filepath.Glob("../analyzer/testdata/chains/*.hist")
	if len(files) == 0 {
		t.Fatal("no ../analyzer/testdata/chains/*.hist")
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range history.Modes {
			inputs = append(inputs, input{f, text, m})
		}
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		c := histgen.RandomCase(histgen.CrashChainConfig(seed), seed)
		inputs = append(inputs, input{c.String(), histgen.Text(c.History), c.Config.Mode})
	}
	shrunk := 0
	for _, in := range inputs {
		a, err := analyzer.Analyze(context.Background(), history.NewReader(bytes.NewReader(in.text), "r", history.Options{}), analyzer.Options{Mode: in.mode})
		if err != nil || a.Result.Linearizable {
			continue
		}
		h, st, err := shrink.Anomaly(context.Background(), a, "t.hist", opener(in.text), shrink.Options{Mode: in.mode, Confirm: true})
		if err != nil {
			t.Fatalf("%s (%v): %v", in.name, in.mode, err)
		}
		if st.Exact != "agrees" {
			t.Fatalf("%s (%v): exact checker %q on the shrunk history:\n%s", in.name, in.mode, st.Exact, histgen.Text(h))
		}
		checkShrunk(t, h, in.mode, a.Result)
		shrunk++
	}
	if shrunk < len(inputs)/5 {
		t.Fatalf("only %d of %d inputs violated", shrunk, len(inputs))
	}
	t.Logf("shrunk %d violating histories", shrunk)
}

// TestShrinkKeepsCrashStory: a write lost in a crash shrinks to a history
// that keeps the crash and the read after it; without asking for the
// story, the same minimization drops the crash (the cycle stands without
// it), and the result would look like a bug of concurrency.
func TestShrinkKeepsCrashStory(t *testing.T) {
	text := []byte(`pmlin-history v1
1 inv read 3 4
1 ret 0 0
2 inv read 4
2 ret 0
1 inv cas 3:0:0x5 4:0:0x6
1 ret ok
2 inv cas 4:0x6:0x7
2 ret ok
crash
9 inv read 3 4
9 ret 0 0x7
2 inv read 3
2 ret 0
`)
	a := analyze(t, text, history.Strict)
	if a.Result.Linearizable || len(a.Result.Anomalies[0].Crashes) == 0 {
		t.Fatalf("want an anomaly with a crash: %+v", a.Result.Anomalies)
	}
	h, _, err := shrink.Anomaly(context.Background(), a, "t.hist", opener(text), shrink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Crashes) != 1 || !slices.ContainsFunc(h.Ops, func(op history.Op) bool { return op.Line == 11 }) {
		t.Fatalf("the crash and the read after it are gone:\n%s", histgen.Text(h))
	}
	checkShrunk(t, h, history.Strict, a.Result)
	res, err := analyzer.CheckHistory(context.Background(), h, analyzer.Options{})
	if err != nil || !slices.ContainsFunc(res.Anomalies[0].Evidence, func(ev analyzer.Evidence) bool { return ev.Kind == analyzer.EvidenceRecovery }) {
		t.Fatalf("the shrunk history's report does not tell the crash story: %v %+v", err, res)
	}
	plain, _, err := shrink.Minimize(context.Background(), h, shrink.Options{Mode: history.Strict, Want: a.Result.Anomalies[0].Kind})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Crashes) != 0 {
		t.Fatalf("without the story the crash should go (else this test proves nothing):\n%s", histgen.Text(plain))
	}
}

// TestOrigins: a shrunk history written by Write names its operations'
// original lines, and Origins reads them back; any other input passes
// through unchanged, without a lookup.
func TestOrigins(t *testing.T) {
	text := []byte("1 inv read 3\n1 ret 0\n1 inv cas 10:0:0x100001\ncrash\n2 inv read 10\n2 ret 0\n2 inv read 10\n2 ret 0x100001\n3 inv read 3\n3 ret 0\n")
	a := analyze(t, text, history.Strict)
	h, _, err := shrink.Anomaly(context.Background(), a, "t.hist", opener(text), shrink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := shrink.Write(&buf, h, []string{"shrunk"}); err != nil {
		t.Fatal(err)
	}
	r, origin := shrink.Origins(bytes.NewReader(buf.Bytes()))
	if origin == nil {
		t.Fatalf("no origins in\n%s", buf.String())
	}
	back, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(back, buf.Bytes()) {
		t.Fatalf("the input changed: %v", err)
	}
	lines := bytes.Split(buf.Bytes(), []byte("\n"))
	for _, op := range h.Ops {
		found := false
		for n, l := range lines {
			if bytes.HasSuffix(bytes.TrimSpace(l), []byte("# line "+itoa(op.Line))) {
				found = true
				if got := origin(int64(n + 1)); got != op.Line {
					t.Errorf("line %d: origin %d, want %d", n+1, got, op.Line)
				}
			}
		}
		if !found {
			t.Errorf("operation of line %d is not annotated:\n%s", op.Line, buf.String())
		}
	}
	r, origin = shrink.Origins(bytes.NewReader(text))
	if back, _ := io.ReadAll(r); origin != nil || !bytes.Equal(back, text) {
		t.Fatalf("a plain history: origin %v, text changed %v", origin != nil, !bytes.Equal(back, text))
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestExactWitness: the exact checker's failing component is cut down to
// operations that cannot be ordered on their own: the witness fails, and
// removing any of its operations (with those that observed its values)
// makes it linearizable.
func TestExactWitness(t *testing.T) {
	found := 0
	for seed := uint64(1); seed <= 200 && found < 10; seed++ {
		c := histgen.RandomCase(histgen.RandomSmallConfig(seed), seed)
		h, mode := c.History, c.Config.Mode
		r, err := exact.Check(context.Background(), h, exact.Options{Mode: mode})
		if err != nil || r.Linearizable {
			continue
		}
		found++
		w, err := shrink.ExactWitness(context.Background(), h, r.Failing, shrink.WitnessOptions{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if len(w) == 0 || len(w) > len(r.Failing) {
			t.Fatalf("%v: witness %v of %v", c, w, r.Failing)
		}
		sub := func(keep []int) *history.History {
			out := &history.History{InitDefault: h.InitDefault, Init: h.Init, Crashes: h.Crashes, Events: h.Events}
			for _, i := range keep {
				op := h.Ops[i]
				op.ID = len(out.Ops)
				op.Crash = -1
				out.Ops = append(out.Ops, op)
			}
			return reparse(t, out)
		}
		if rw, err := exact.Check(context.Background(), sub(w), exact.Options{Mode: mode}); err != nil || rw.Linearizable {
			t.Fatalf("%v: the witness %v is linearizable (%v)", c, w, err)
		}
		// 1-minimal: without any of its operations (and those that read
		// or expected a value it wrote there, and so on: a read of a value
		// nobody wrote fails trivially) it is linearizable.
		for _, i := range w {
			gone := []int{i}
			for k := 0; k < len(gone); k++ {
				for _, j := range w {
					if !slices.Contains(gone, j) && sawWrite(&h.Ops[j], &h.Ops[gone[k]]) {
						gone = append(gone, j)
					}
				}
			}
			rest := slices.DeleteFunc(slices.Clone(w), func(j int) bool { return slices.Contains(gone, j) })
			if len(rest) == 0 {
				continue
			}
			if rr, err := exact.Check(context.Background(), sub(rest), exact.Options{Mode: mode}); err == nil && !rr.Linearizable {
				t.Fatalf("%v: the witness %v still fails without op %d: %v", c, w, i, rest)
			}
		}
		t.Logf("%v: %d failing operations, witness of %d", c, len(r.Failing), len(w))
	}
	if found == 0 {
		t.Fatal("no violating random history")
	}
}

// sawWrite reports whether op read (or, a swap, replaced; a failure,
// reported), or expected and did not fail, a value w wrote at the same
// address.
func sawWrite(op, w *history.Op) bool {
	if w.Kind == history.Read || w.Status == history.Failed {
		return false // not a write: w is a read or a failed cas
	}
	seen := op.Values // a read's, a swap's, or a failure's that reports them
	if op.Kind == history.CAS && op.Status != history.Failed {
		seen = op.Expected
	}
	for k, a := range op.Addrs {
		if j := slices.Index(w.Addrs, a); j >= 0 && k < len(seen) && seen[k] == w.New[j] {
			return true
		}
	}
	return false
}

// reparse writes h and reads it back: a well-formed history, its crashes
// assigned by the text.
func reparse(t *testing.T, h *history.History) *history.History {
	t.Helper()
	var buf bytes.Buffer
	if _, err := h.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	out, err := history.ReadAll(&buf, "sub")
	if err != nil {
		t.Fatal(err)
	}
	return out
}
