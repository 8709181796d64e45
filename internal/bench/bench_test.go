package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/levelhash"
	"github.com/pmlin/pmlin/internal/reduce"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/target"
)

// TestMain lets the test binary stand in for pmlin's bench child: with
// PMLIN_BENCH_CHILD=1 it runs ChildMain on its arguments.
func TestMain(m *testing.M) {
	if os.Getenv("PMLIN_BENCH_CHILD") == "1" {
		os.Exit(ChildMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func selfChild(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "PMLIN_BENCH_CHILD=1", "GORACE="+testenv.ChildGORACE())
	return cmd
}

// tiny are options for runs of a second or two.
func tiny(t *testing.T) Options {
	return Options{
		Out:        t.TempDir(),
		Work:       t.TempDir(),
		Child:      selfChild,
		HBMaxBytes: 48 << 10,
		MaxBytes:   96 << 10,
		Points:     3,
		Sizes:      []int{100, 300},
		Procs:      []int{2, 4},
		Threads:    []int{1, 2},
		Ks:         []int{1, 2},
		Duration:   20 * time.Millisecond,
		Timeout:    20 * time.Second,
		MemLimit:   2 << 30,
		Reps:       1,
		Targets:    []*target.Target{mwcas.Target(), levelhash.Target()},
	}
}

// checkFiles checks that the report's files exist, PNGs are PNGs and the
// CSV has the table's columns.
func checkFiles(t *testing.T, r Report, wantCols ...string) {
	t.Helper()
	m := r.meta()
	var pngs, csvs, mds int
	for _, f := range m.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".png":
			pngs++
			if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("%s is not a PNG", f)
			}
		case ".csv":
			csvs++
			rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(rows) < 2 {
				t.Fatalf("%s: %d rows", f, len(rows))
			}
			for _, c := range wantCols {
				if !slices.Contains(rows[0], c) {
					t.Errorf("%s: no column %q in %v", f, c, rows[0])
				}
			}
			for _, row := range rows[1:] {
				if len(row) != len(rows[0]) {
					t.Errorf("%s: row %v has %d cells for %d columns", f, row, len(row), len(rows[0]))
				}
			}
		case ".md":
			mds++
			if !strings.Contains(string(b), "| "+strings.Join(r.Table().Cols, " | ")+" |") {
				t.Errorf("%s: no table", f)
			}
		}
	}
	if csvs != 1 || mds != 1 || pngs == 0 {
		t.Errorf("files %v: want a CSV, a Markdown file and PNGs", m.Files)
	}
}

// jsonFields marshals r and checks it has the fields (dotted paths into
// the first element of a list).
func jsonFields(t *testing.T, r any, fields ...string) map[string]any {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		var cur any = v
		for _, part := range strings.Split(f, ".") {
			if l, ok := cur.([]any); ok {
				if len(l) == 0 {
					t.Fatalf("%s: empty list", f)
				}
				cur = l[0]
			}
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%s: not an object at %q", f, part)
			}
			if cur, ok = m[part]; !ok {
				t.Fatalf("JSON has no %s: %s", f, b)
			}
		}
	}
	return v
}

func TestReduceHB(t *testing.T) {
	for _, source := range []string{"driver", "gen"} {
		t.Run(source, func(t *testing.T) {
			o := tiny(t)
			o.Source = source
			var out bytes.Buffer
			r, err := Run(context.Background(), "reducehb", o, &out)
			if err != nil {
				t.Fatal(err)
			}
			cols := []string{"log_bytes", "ops", "edges_reduced", "edges_naive", "seconds_reduced", "seconds_naive"}
			if header := strings.Fields(strings.SplitN(out.String(), "\n", 2)[0]); !slices.Equal(header[:len(cols)], cols) {
				t.Errorf("table header %v, want it to start with %v", header, cols)
			}
			checkFiles(t, r, cols...)
			jsonFields(t, r, "suite", "machine.cpus", "points.log_bytes", "points.ops", "points.edges_reduced",
				"points.edges_naive", "points.seconds_reduced", "points.seconds_naive", "speedup_at_1mib")
			rr := r.(*ReduceHBReport)
			if len(rr.Points) != 3 {
				t.Fatalf("%d points", len(rr.Points))
			}
			for _, p := range rr.Points {
				if p.StatusNaive != StatusOK || p.StatusReduced != StatusOK || p.Ops == 0 || p.EdgesNaive < p.EdgesReduced ||
					p.SecondsCheck <= 0 || p.LogBytes > o.HBMaxBytes {
					t.Errorf("point %+v", p)
				}
			}
		})
	}
}

func TestScale(t *testing.T) {
	o := tiny(t)
	o.Source = "gen"
	r, err := Run(context.Background(), "scale", o, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, r, "log_bytes", "ops", "edges", "seconds", "peak_rss_mib", "status")
	jsonFields(t, r, "points.log_bytes", "points.seconds", "points.edges", "time_fit.slope", "time_fit.r2", "edges_fit.r2", "log.bytes")
	sr := r.(*ScaleReport)
	if len(sr.Points) != 3 {
		t.Fatalf("%d points", len(sr.Points))
	}
	for i, p := range sr.Points {
		if p.Status != StatusOK || !p.Linearizable || p.Edges <= 0 || p.PeakRSS <= 0 || (i > 0 && p.Ops <= sr.Points[i-1].Ops) {
			t.Errorf("point %+v", p)
		}
	}
	if sr.EdgesFit.R2 < 0.9 {
		t.Errorf("edges are not linear in the log size: %+v", sr.EdgesFit)
	}
}

func TestPorcupine(t *testing.T) {
	o := tiny(t)
	r, err := Run(context.Background(), "porcupine", o, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, r, "procs", "ops", "pmlin_seconds", "pmlin_peak_rss_mib", "porcupine_seconds", "porcupine_peak_rss_mib", "porcupine_status")
	jsonFields(t, r, "points.procs", "points.ops", "points.pmlin_seconds", "points.porcupine_seconds",
		"points.pmlin_peak_rss_bytes", "points.porcupine_peak_rss_bytes", "points.porcupine_status", "timeout_seconds")
	pr := r.(*PorcupineReport)
	if len(pr.Points) != 4 {
		t.Fatalf("%d points", len(pr.Points))
	}
	for _, p := range pr.Points {
		if p.PmlinStatus != StatusOK || p.PorcupineStatus != StatusOK || p.PorcupinePeakRSS <= 0 || p.Speedup <= 0 {
			t.Errorf("point %+v", p)
		}
	}
}

// TestPorcupineLimits: a run beyond the memory limit is oom, and the sizes
// above it at the same concurrency are skipped, not dropped.
func TestPorcupineLimits(t *testing.T) {
	o := tiny(t)
	o.Procs = []int{3}
	o.MemLimit = 1 << 20 // below any Go process's resident memory
	r, err := Run(context.Background(), "porcupine", o, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	pr := r.(*PorcupineReport)
	if len(pr.Points) != 2 || pr.Points[0].PorcupineStatus != StatusOOM || pr.Points[1].PorcupineStatus != StatusSkipped ||
		pr.Points[0].PmlinStatus != StatusOOM {
		t.Fatalf("points %+v", pr.Points)
	}
	checkFiles(t, r)
}

func TestMwCAS(t *testing.T) {
	o := tiny(t)
	r, err := Run(context.Background(), "mwcas", o, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, r, "impl", "k", "threads", "ops_per_sec")
	jsonFields(t, r, "points.impl", "points.k", "points.threads", "points.ops_per_sec")
	mr := r.(*MwCASReport)
	if len(mr.Points) != 3*2*2 {
		t.Fatalf("%d points", len(mr.Points))
	}
	for _, p := range mr.Points {
		if p.Ops <= 0 || p.OpsPerSec <= 0 || p.Succeeded <= 0 {
			t.Errorf("point %+v", p)
		}
	}
}

// TestTargets: every target measured, a primitive and a data structure,
// recorded and not, with the recorded side's history written.
func TestTargets(t *testing.T) {
	o := tiny(t)
	r, err := Run(context.Background(), "targets", o, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, r, "target", "model", "threads", "ops_per_sec_plain", "ops_per_sec_logged")
	jsonFields(t, r, "points.target", "points.model", "points.ops_per_sec_plain", "points.overhead")
	tr := r.(*TargetsReport)
	if len(tr.Points) != 2*2 {
		t.Fatalf("%d points", len(tr.Points))
	}
	for _, p := range tr.Points {
		if p.OpsPerSecPlain <= 0 || p.OpsPerSecLogged <= 0 || p.HistoryBytes <= 0 || p.Ops != 100 {
			t.Errorf("point %+v", p)
		}
	}
	if tr.Points[2].Model != "map" || tr.Points[0].Model != "words" {
		t.Errorf("models %q, %q", tr.Points[0].Model, tr.Points[2].Model)
	}
	o.Targets = nil
	if _, err := Run(context.Background(), "targets", o, new(bytes.Buffer)); err == nil {
		t.Error("no targets: no error")
	}
}

func TestLogging(t *testing.T) {
	o := tiny(t)
	var out bytes.Buffer
	r, err := Run(context.Background(), "logging", o, &out)
	if err != nil {
		t.Fatal(err)
	}
	jsonFields(t, r, "ops_per_sec_plain", "ops_per_sec_logged", "overhead")
	lr := r.(*LoggingReport)
	checkFiles(t, r, "threads", "ops_per_sec_plain", "ops_per_sec_logged", "overhead")
	if lr.OpsPerSecPlain <= 0 || lr.OpsPerSecLogged <= 0 || len(lr.Points) != 4 || lr.HeadlineThreads != 2 || lr.Points[0].Emulate || !lr.Points[3].Emulate {
		t.Errorf("report %+v", lr)
	}
	for _, p := range lr.Points {
		if p.OpsPlain <= 0 || p.OpsLogged <= 0 || p.HistoryBytes <= 0 || p.TextBytes <= 0 || p.OpsPerSecText <= 0 ||
			p.OpsPerSecLoggedWork < p.OpsPerSecLogged || p.OverheadMin > p.Overhead || p.Overhead > p.OverheadMax ||
			p.OverheadTextMin > p.OverheadText || p.OverheadText > p.OverheadTextMax || p.Clock == "" {
			t.Errorf("point %+v", p)
		}
	}
}

// TestLoggingSplit: with Split, every point has the dropped side's
// figures (in the JSON, the table and the explanation), and without it
// none.
func TestLoggingSplit(t *testing.T) {
	o := tiny(t)
	o.Split, o.Emulate, o.Reps = true, "off", 6
	var out bytes.Buffer
	r, err := Run(context.Background(), "logging", o, &out)
	if err != nil {
		t.Fatal(err)
	}
	jsonFields(t, r, "split", "points.overhead_dropped", "points.ops_per_sec_dropped", "points.overhead_dropped_ci_low", "points.overhead_dropped_ci_high", "points.overhead_dropped_cpu")
	checkFiles(t, r, "threads", "overhead", "ops_per_sec_dropped", "overhead_dropped", "overhead_dropped_cpu")
	lr := r.(*LoggingReport)
	if !lr.Split || len(lr.Points) != 2 {
		t.Fatalf("report %+v", lr)
	}
	for _, p := range lr.Points {
		if p.OpsPerSecDropped <= 0 || p.OverheadDroppedLow > p.OverheadDropped || p.OverheadDropped > p.OverheadDroppedHigh || p.OverheadDroppedCPU == 0 {
			t.Errorf("point %+v", p)
		}
	}
	if !strings.Contains(lr.Explain(), "--split") || !strings.Contains(strings.Join(lr.Headlines(), "\n"), "history dropped") {
		t.Errorf("explanation or headlines without the dropped side:\n%s\n%s", lr.Explain(), lr.Headlines())
	}

	o = tiny(t)
	o.Emulate, o.Threads = "off", []int{2}
	r, err = Run(context.Background(), "logging", o, &out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "dropped") || strings.Contains(r.(*LoggingReport).Explain(), "--split") {
		t.Errorf("the dropped side without Split: %s", b)
	}
}

func TestRunAll(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every suite")
	}
	o := tiny(t)
	o.Source = "gen"
	o.Sizes, o.Procs = []int{100}, []int{2}
	o.Command = "pmlin bench all --test"
	var out bytes.Buffer
	a, err := RunAll(context.Background(), o, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Failed) > 0 {
		t.Fatalf("failed: %v", a.Failed)
	}
	b, err := os.ReadFile(filepath.Join(o.Out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Machine: ", "## Headlines", "## scale", "## reducehb", "## logging", "## porcupine", "## mwcas", "## targets",
		"![scale-time](scale-time.png)", "pmlin bench reducehb --test"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("summary.md has no %q", want)
		}
	}
	jsonFields(t, a, "suite", "machine", "reports.suite")
}

func TestUnknownSuite(t *testing.T) {
	if _, err := Run(context.Background(), "nope", Options{}, new(bytes.Buffer)); err == nil {
		t.Fatal("unknown suite accepted")
	}
}

func TestChildStatuses(t *testing.T) {
	ctx := context.Background()
	o := &Options{Child: func([]string) *exec.Cmd { return exec.Command("sleep", "5") }}
	if r := o.runChild(ctx, limits{timeout: 50 * time.Millisecond}, nil); r.Status != StatusTimeout || r.Wall > 4 {
		t.Errorf("sleep under a 50ms limit: %+v", r)
	}
	o.Child = func([]string) *exec.Cmd { return exec.Command("false") }
	if r := o.runChild(ctx, limits{}, nil); r.Status != StatusError {
		t.Errorf("false: %+v", r)
	}
	o.Child = selfChild
	if r := o.runChild(ctx, limits{}, nil, "frobnicate"); r.Status != StatusError || !strings.Contains(r.Err, "unknown measurement") {
		t.Errorf("unknown measurement: %+v", r)
	}
	var out checkOut
	path := filepath.Join(t.TempDir(), "h.hist")
	os.WriteFile(path, []byte("1 inv read 1\n1 ret 0\n2 inv cas 1:0:5\n2 ret ok\n"), 0o644)
	if r := o.runChild(ctx, limits{mem: 1 << 30}, &out, "check", "-file", path); r.Status != StatusOK || out.Ops != 2 || !out.Linearizable || r.PeakRSS <= 0 {
		t.Errorf("check: %+v %+v", r, out)
	}
	if r := o.runChild(ctx, limits{mem: 1 << 20}, &out, "check", "-file", path); r.Status != StatusOOM {
		t.Errorf("check under 1 MiB: %+v", r)
	}
}

func TestPrefixEnd(t *testing.T) {
	text := "ab\ncde\n\nfg\n"
	for n, want := range map[int64]int64{1: -1, 3: 3, 4: 3, 7: 7, 8: 8, 10: 8, 11: 11} {
		got, err := prefixEnd(strings.NewReader(text), n)
		if want < 0 {
			if err == nil {
				t.Errorf("n=%d: no error", n)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("n=%d: %d, %v (want %d)", n, got, err, want)
		}
	}
}

func TestLinearFit(t *testing.T) {
	f := linearFit([]float64{1, 2, 3, 4}, []float64{3, 5, 7, 9})
	if f.Slope != 2 || f.Intercept != 1 || f.R2 != 1 {
		t.Errorf("%+v", f)
	}
	if f := linearFit([]float64{1, 2, 3}, []float64{1, 3, 2}); f.R2 <= 0 || f.R2 >= 1 {
		t.Errorf("%+v", f)
	}
	if f := linearFit([]float64{1}, []float64{1}); f != (Fit{}) {
		t.Errorf("one point: %+v", f)
	}
}

// TestMeasureHB checks both sides against each other and against counting
// happens-before pairs directly, on a history with a crash and pending
// operations.
func TestMeasureHB(t *testing.T) {
	text := `1 inv read 1
2 inv read 2
1 ret 0
3 inv read 3
2 ret 0
1 inv read 1
3 ret 0
1 ret 0
2 inv read 1
crash
3 inv read 2
3 ret 0
1 inv read 3
`
	h, err := history.ReadAll(strings.NewReader(text), "t")
	if err != nil {
		t.Fatal(err)
	}
	var pairs int64
	for _, a := range h.Ops {
		for _, b := range h.Ops {
			if a.Ret >= 0 && a.Ret < b.Inv {
				pairs++
			}
		}
	}
	red, err := measureHB(context.Background(), strings.NewReader(text), "t", false)
	if err != nil {
		t.Fatal(err)
	}
	nai, err := measureHB(context.Background(), strings.NewReader(text), "t", true)
	if err != nil {
		t.Fatal(err)
	}
	if red.Ops != 7 || nai.Ops != 7 || nai.Edges != pairs || red.EdgesAll != pairs || nai.EdgesAll != pairs ||
		red.Edges >= pairs || red.Visited != red.Edges || nai.Visited != nai.Edges || red.Cyclic || nai.Cyclic {
		t.Fatalf("pairs %d; reduced %+v; naive %+v", pairs, red, nai)
	}
}

func TestDFSFindsCycles(t *testing.T) {
	// 0 -> 1 -> 2 -> 0, and 3 alone.
	if _, cyc := dfsCSR([]int64{0, 1, 2, 3, 3}, []int32{1, 2, 0}); !cyc {
		t.Error("CSR cycle missed")
	}
	if _, cyc := dfsCSR([]int64{0, 1, 2, 2}, []int32{1, 2}); cyc {
		t.Error("CSR path taken for a cycle")
	}
	// Ranges: 0 -> [1,3), 1 -> [2,3), 2 -> [0,1): a cycle through 2 -> 0.
	if _, cyc := dfsRanges([]int32{1, 2, 0}, []int32{3, 3, 1}); !cyc {
		t.Error("range cycle missed")
	}
	lo := []int32{1, 2, 3}
	if v, cyc := dfsRanges(lo, reduce.Ranges(lo, nil)); cyc || v != 2 {
		t.Errorf("chain: visited %d, cyclic %v", v, cyc)
	}
}

func TestTableFormats(t *testing.T) {
	tb := &Table{Cols: []string{"a", "b"}}
	tb.add(1, 0.000123456)
	tb.add("x|y", 1234567.0)
	var txt, md, cs bytes.Buffer
	tb.WriteText(&txt)
	tb.WriteMarkdown(&md)
	tb.WriteCSV(&cs)
	if !strings.Contains(txt.String(), "0.0001235") || !strings.Contains(txt.String(), "1234567") {
		t.Errorf("text:\n%s", txt.String())
	}
	if !strings.Contains(md.String(), `| x\|y | 1234567 |`) {
		t.Errorf("markdown:\n%s", md.String())
	}
	if cs.String() != "a,b\n1,0.0001235\nx|y,1234567\n" {
		t.Errorf("csv:\n%s", cs.String())
	}
}

// TestSliceOrder: every round runs each side once; the unrecorded and the
// binary slice are next to each other and each goes first in half the
// rounds, so that drift and what a slice leaves to the next fall on both
// alike.
func TestSliceOrder(t *testing.T) {
	first := map[int]int{}
	for i := range 10 {
		o := sliceOrder(i)
		seen := map[int]bool{}
		for _, s := range o {
			seen[s] = true
		}
		if len(seen) != nSides {
			t.Fatalf("round %d runs %v, not every side once", i, o)
		}
		if o[nSides-1] != sideText {
			t.Fatalf("round %d runs %v: the text slice is not last", i, o)
		}
		first[o[0]]++
	}
	if first[sidePlain] != 5 || first[sideBinary] != 5 {
		t.Fatalf("first slices over 10 rounds: %v, want the unrecorded and the binary side 5 times each", first)
	}
}

// TestMedianInterval checks the sign test's interval against a brute
// force: for n draws of a uniform distribution, the fraction of trials
// whose interval misses the true median must be near (at most) 5 %.
func TestMedianInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{6, 9, 40, 121} {
		miss := 0
		const trials = 4000
		for range trials {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = rng.Float64()
			}
			lo, hi := medianInterval(xs)
			if lo > hi {
				t.Fatalf("n=%d: interval %v > %v", n, lo, hi)
			}
			if !(lo <= 0.5 && 0.5 <= hi) {
				miss++
			}
		}
		if f := float64(miss) / trials; f > 0.065 || f < 0.005 {
			t.Errorf("n=%d: the interval missed the median in %.1f %% of trials, want about 5 %% or less", n, 100*f)
		}
	}
	if lo, hi := medianInterval([]float64{3, 1, 2}); lo != 1 || hi != 3 {
		t.Errorf("3 values: %v..%v, want their range 1..3", lo, hi)
	}
}

// TestLoggingVerdictIsSingle: the target's sentence gives one verdict, the
// one target_met has, whatever target_sure says ("met" and "MISSED" in one
// sentence was the old text when the medians met the target and an
// interval did not).
func TestLoggingVerdictIsSingle(t *testing.T) {
	pt := func(threads int, overhead, high float64) LoggingPoint {
		return LoggingPoint{Threads: threads, Overhead: overhead, OverheadLow: overhead - 0.01, OverheadHigh: high}
	}
	verdictWord := regexp.MustCompile(`\b(met|MISSED)\b`)
	for _, tc := range []struct {
		points []LoggingPoint
		want   string
		also   string
	}{
		{[]LoggingPoint{pt(1, 0.05, 0.07), pt(2, 0.08, 0.09)}, "met", "every point's 95 % interval below 10 % too; the worst point: 2 threads"},
		{[]LoggingPoint{pt(1, 0.05, 0.14), pt(2, 0.08, 0.09)}, "met", "though not surely: the 95 % interval of 1 threads, emulation false, 5.0 % (95 % interval 4.0 to 14.0 %) reaches above 10 %"},
		{[]LoggingPoint{pt(1, 0.12, 0.15), pt(2, 0.08, 0.09)}, "MISSED", "the worst point: 1 threads, emulation false, 12.0 %"},
		{[]LoggingPoint{pt(1, 0.12, 0.11), pt(2, 0.14, 0.16)}, "MISSED", "the worst point: 2 threads"},
	} {
		r := &LoggingReport{Points: tc.points, Worst: tc.points[0], TargetMet: true, TargetSure: true}
		for _, p := range tc.points {
			if p.Overhead > r.Worst.Overhead {
				r.Worst = p
			}
			r.TargetMet = r.TargetMet && p.Overhead <= loggingTarget
			r.TargetSure = r.TargetSure && p.OverheadHigh <= loggingTarget
		}
		h := r.Headlines()
		last := h[len(h)-1]
		words := verdictWord.FindAllString(last, -1)
		if len(words) != 1 || words[0] != tc.want || !strings.Contains(last, tc.also) {
			t.Errorf("met %v, sure %v: %q: verdicts %v, want one, %s, and %q", r.TargetMet, r.TargetSure, last, words, tc.want, tc.also)
		}
		for _, s := range h[:len(h)-1] {
			if verdictWord.MatchString(s) {
				t.Errorf("a verdict outside the target's sentence: %q", s)
			}
		}
	}
}
