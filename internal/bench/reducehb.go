package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/plot"
)

// ReduceHBPoint compares, on one prefix of the log, the happens-before
// relation reduced by ReduceHB with all its pairs. seconds_reduced and
// seconds_naive are end to end: stream the prefix computing each
// operation's response rank, build the edges, run a cycle check over them.
type ReduceHBPoint struct {
	LogBytes       int64   `json:"log_bytes"`
	Ops            int64   `json:"ops"`
	EdgesReduced   int64   `json:"edges_reduced"`
	EdgesNaive     int64   `json:"edges_naive"`
	SecondsReduced float64 `json:"seconds_reduced"`
	SecondsNaive   float64 `json:"seconds_naive"`
	// Speedup is SecondsNaive / SecondsReduced (0 if the naive side did
	// not finish).
	Speedup float64 `json:"speedup"`
	// The phases: the parse (the same work on both sides; the reduced
	// run's), then building the edges and the DFS on each side.
	SecondsParse        float64 `json:"seconds_parse"`
	SecondsBuildReduced float64 `json:"seconds_build_reduced"`
	SecondsDFSReduced   float64 `json:"seconds_dfs_reduced"`
	SecondsBuildNaive   float64 `json:"seconds_build_naive"`
	SecondsDFSNaive     float64 `json:"seconds_dfs_naive"`
	// SpeedupHB compares the happens-before phases only (build + DFS).
	SpeedupHB float64 `json:"speedup_hb"`
	// SecondsCheck is the whole analyzer (pmlin check) on the prefix, and
	// EdgesCheck its multigraph's edges of every kind.
	SecondsCheck   float64 `json:"seconds_check"`
	EdgesCheck     int64   `json:"edges_check"`
	PeakRSSReduced int64   `json:"peak_rss_reduced_bytes"`
	PeakRSSNaive   int64   `json:"peak_rss_naive_bytes"`
	StatusNaive    string  `json:"status_naive"`
	StatusReduced  string  `json:"status_reduced"`
	Err            string  `json:"error,omitempty"`
}

// ReduceHBReport is the reducehb suite's result (the OPODIS paper's
// Figure 9).
type ReduceHBReport struct {
	Meta
	Log        LogInfo         `json:"log"`
	GOMAXPROCS int             `json:"gomaxprocs"`
	Reps       int             `json:"reps"`
	Points     []ReduceHBPoint `json:"points"`
	// At1MiB is the point at 1 MiB (or the nearest), SpeedupAt1MiB its
	// speedup; the target is 50.
	SpeedupAt1MiB float64 `json:"speedup_at_1mib"`
	BytesAt1MiB   int64   `json:"bytes_at_1mib"`
	TargetMet     bool    `json:"target_met"`
}

// DefaultReduceHBMaxBytes is reducehb's largest prefix.
const DefaultReduceHBMaxBytes = 1 << 20

// reduceHBSizes doubles from 64 KiB up to maxBytes (included).
func reduceHBSizes(maxBytes int64) []int64 {
	if maxBytes < 256<<10 {
		return []int64{maxBytes / 4, maxBytes / 2, maxBytes}
	}
	var s []int64
	for b := int64(64 << 10); b < maxBytes; b *= 2 {
		s = append(s, b)
	}
	return append(s, maxBytes)
}

func runReduceHB(ctx context.Context, o *Options) (Report, error) {
	procs := orInts(o.Procs, []int{8})[0]
	maxBytes := o.HBMaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultReduceHBMaxBytes
	}
	log, err := o.sourceLog(ctx, maxBytes, procs)
	if err != nil {
		return nil, err
	}
	defer log.remove()
	r := &ReduceHBReport{Log: log, GOMAXPROCS: o.gomaxprocs(1), Reps: o.reps(3)}
	lim := limits{timeout: o.timeout(10 * time.Minute), mem: o.memLimit(), gomaxprocs: r.GOMAXPROCS}
	for _, size := range reduceHBSizes(min(maxBytes, log.Bytes)) {
		n := fmt.Sprint(size)
		red, cr := bestOf(ctx, o, lim, r.Reps, hbSecs, nil, "hb", "-file", log.Path, "-bytes", n)
		nai, cn := bestOf(ctx, o, lim, r.Reps, hbSecs, nil, "hb", "-naive", "-file", log.Path, "-bytes", n)
		chk, cc := bestOf(ctx, o, lim, r.Reps, checkSecs, nil, "check", "-file", log.Path, "-bytes", n)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p := ReduceHBPoint{LogBytes: size, StatusReduced: cr.Status, StatusNaive: cn.Status,
			PeakRSSReduced: cr.PeakRSS, PeakRSSNaive: cn.PeakRSS}
		for _, c := range []childRun{cr, cn, cc} {
			if c.Err != "" && p.Err == "" {
				p.Err = c.Err
			}
		}
		if cr.Status == StatusOK {
			p.LogBytes, p.Ops, p.EdgesReduced, p.EdgesNaive = red.Bytes, red.Ops, red.Edges, red.EdgesAll
			p.SecondsReduced, p.SecondsParse, p.SecondsBuildReduced, p.SecondsDFSReduced = red.Seconds, red.SecondsParse, red.SecondsBuild, red.SecondsDFS
		}
		if cn.Status == StatusOK {
			p.SecondsNaive, p.SecondsBuildNaive, p.SecondsDFSNaive = nai.Seconds, nai.SecondsBuild, nai.SecondsDFS
			p.EdgesNaive = nai.Edges
		}
		if cc.Status == StatusOK {
			p.SecondsCheck, p.EdgesCheck = chk.Seconds, chk.Edges.Total()
		}
		if p.SecondsReduced > 0 && p.SecondsNaive > 0 {
			p.Speedup = p.SecondsNaive / p.SecondsReduced
			if d := p.SecondsBuildReduced + p.SecondsDFSReduced; d > 0 {
				p.SpeedupHB = (p.SecondsBuildNaive + p.SecondsDFSNaive) / d
			}
		}
		r.Points = append(r.Points, p)
		o.progress("reducehb: %s, %d ops: reduced %d edges %.4f s; naive %s %d edges %.4f s; speedup %.0fx",
			mib(p.LogBytes), p.Ops, p.EdgesReduced, p.SecondsReduced, p.StatusNaive, p.EdgesNaive, p.SecondsNaive, p.Speedup)
	}
	best := math.Inf(1)
	for _, p := range r.Points {
		if d := math.Abs(math.Log(float64(p.LogBytes) / (1 << 20))); d < best {
			best, r.SpeedupAt1MiB, r.BytesAt1MiB = d, p.Speedup, p.LogBytes
		}
	}
	r.TargetMet = r.SpeedupAt1MiB >= 50 && r.BytesAt1MiB >= 1000<<10
	return r, nil
}

func (r *ReduceHBReport) Table() *Table {
	t := &Table{Cols: []string{"log_bytes", "ops", "edges_reduced", "edges_naive", "seconds_reduced", "seconds_naive", "speedup",
		"seconds_parse", "seconds_hb_reduced", "seconds_hb_naive", "speedup_hb", "seconds_check", "edges_check",
		"peak_rss_naive_mib", "status_naive"}}
	for _, p := range r.Points {
		t.add(p.LogBytes, p.Ops, p.EdgesReduced, p.EdgesNaive, p.SecondsReduced, p.SecondsNaive, p.Speedup,
			p.SecondsParse, p.SecondsBuildReduced+p.SecondsDFSReduced, p.SecondsBuildNaive+p.SecondsDFSNaive, p.SpeedupHB,
			p.SecondsCheck, p.EdgesCheck, float64(p.PeakRSSNaive)/(1<<20), p.StatusNaive)
	}
	return t
}

func (r *ReduceHBReport) Headlines() []string {
	var at ReduceHBPoint
	for _, p := range r.Points {
		if p.LogBytes == r.BytesAt1MiB {
			at = p
		}
	}
	if at.StatusNaive != StatusOK {
		return []string{fmt.Sprintf("At %s the all-pairs baseline did not finish (%s): %d happens-before pairs against %d reduced edges. Target (ReduceHB ≥ 50× faster at 1 MB): not measured.",
			mib(at.LogBytes), at.StatusNaive, at.EdgesNaive, at.EdgesReduced)}
	}
	h := []string{
		fmt.Sprintf("At %s (%d operations): ReduceHB keeps %d happens-before edges, all pairs are %d (%.0f× fewer).",
			mib(at.LogBytes), at.Ops, at.EdgesReduced, at.EdgesNaive, float64(at.EdgesNaive)/math.Max(1, float64(at.EdgesReduced))),
		fmt.Sprintf("End to end (parse + edges + cycle check) %.4f s with ReduceHB against %.3f s with all pairs: %.0f× faster (the paper: 100×). Target (≥ 50× at 1 MB): %s.",
			at.SecondsReduced, at.SecondsNaive, at.Speedup, met(r.TargetMet)),
		fmt.Sprintf("The happens-before phases alone (build + DFS): %.5f s against %.3f s, %.0f×; the whole analyzer on the prefix takes %.4f s; the all-pairs run peaked at %s.",
			at.SecondsBuildReduced+at.SecondsDFSReduced, at.SecondsBuildNaive+at.SecondsDFSNaive, at.SpeedupHB, at.SecondsCheck, mib(at.PeakRSSNaive)),
	}
	return h
}

func (r *ReduceHBReport) Explain() string {
	return fmt.Sprintf(`Reproduces Figure 9 of the OPODIS paper: happens-before with and without
ReduceHB. The log is %s; the points are its prefixes, cut at a line end. The
analyzer keeps happens-before as ReduceHB's ranges and cannot run without
them, so both sides are timed the same way, each in a child process with
GOMAXPROCS=%d, best of %d fresh processes: stream the prefix computing each operation's
response rank (the same parse), build the edges (reduce.Ranges, ReduceHB,
against reduce.AllPairs, every happens-before pair in compressed adjacency
arrays), then run a cycle check (an iterative DFS) over them.
seconds_reduced and seconds_naive are these totals; seconds_hb_* are the
build and DFS phases alone; seconds_check is the whole analyzer (pmlin
check, all edge kinds) on the same prefix, for scale. A run that exceeds
the memory or time limit is marked oom or timeout.`, r.Log, r.GOMAXPROCS, r.Reps)
}

func (r *ReduceHBReport) Plot(dir string) ([]string, error) {
	var xs, tr, tn, tc, er, en []float64
	for _, p := range r.Points {
		xs = append(xs, float64(p.LogBytes)/(1<<10))
		tr = append(tr, p.SecondsReduced)
		tn = append(tn, p.SecondsNaive)
		tc = append(tc, p.SecondsCheck)
		er = append(er, float64(p.EdgesReduced))
		en = append(en, float64(p.EdgesNaive))
	}
	p1 := newPlot("Happens-before with and without ReduceHB (OPODIS Fig. 9)", "log size (KiB)", "seconds (parse + edges + cycle check)", true, true)
	for _, s := range []series{
		{name: "all pairs (no ReduceHB)", xs: xs, ys: tn, style: 0},
		{name: "ReduceHB", xs: xs, ys: tr, style: 1},
		{name: "whole analyzer (pmlin check)", xs: xs, ys: tc, style: 2, dashed: true},
	} {
		if err := add(p1, s); err != nil {
			return nil, err
		}
	}
	p2 := newPlot("Happens-before edges", "log size (KiB)", "edges", true, true)
	for _, s := range []series{
		{name: "all pairs", xs: xs, ys: en, style: 0},
		{name: "ReduceHB", xs: xs, ys: er, style: 1},
	} {
		if err := add(p2, s); err != nil {
			return nil, err
		}
	}
	return savePlots(dir, map[string]*plot.Plot{"reducehb-time.png": p1, "reducehb-edges.png": p2}, "reducehb-time.png", "reducehb-edges.png")
}
