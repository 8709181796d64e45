package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/plot"
)

// ScalePoint is the analyzer on one prefix of the log.
type ScalePoint struct {
	LogBytes     int64   `json:"log_bytes"`
	Ops          int64   `json:"ops"`
	Edges        int64   `json:"edges"`
	EdgesHB      int64   `json:"edges_hb"`
	EdgesRF      int64   `json:"edges_rf"`
	EdgesAux     int64   `json:"edges_aux"`
	Seconds      float64 `json:"seconds"`
	PeakRSS      int64   `json:"peak_rss_bytes"`
	Status       string  `json:"status"`
	Linearizable bool    `json:"linearizable"`
	Err          string  `json:"error,omitempty"`
}

// ScaleReport is the scale suite's result (the OPODIS paper's Figure 8).
type ScaleReport struct {
	Meta
	Log        LogInfo      `json:"log"`
	GOMAXPROCS int          `json:"gomaxprocs"`
	Reps       int          `json:"reps"`
	Points     []ScalePoint `json:"points"`
	// TimeFit is seconds against MiB of log, EdgesFit edges against MiB.
	TimeFit  Fit `json:"time_fit"`
	EdgesFit Fit `json:"edges_fit"`
	// Linear: the time fit explains at least 99 % of the variance.
	Linear bool `json:"linear"`
}

// Default sizes of scale.
const (
	DefaultScaleMaxBytes = 256 << 20
	DefaultScalePoints   = 8
)

func runScale(ctx context.Context, o *Options) (Report, error) {
	procs := orInts(o.Procs, []int{8})[0]
	maxBytes := o.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultScaleMaxBytes
	}
	points := o.Points
	if points <= 0 {
		points = DefaultScalePoints
	}
	log, err := o.sourceLog(ctx, maxBytes, procs)
	if err != nil {
		return nil, err
	}
	defer log.remove()
	maxBytes = min(maxBytes, log.Bytes)
	r := &ScaleReport{Log: log, GOMAXPROCS: o.gomaxprocs(1), Reps: o.reps(3)}
	lim := limits{timeout: o.timeout(10 * time.Minute), mem: o.memLimit(), gomaxprocs: r.GOMAXPROCS}
	var xs, ts, es []float64
	for i := 1; i <= points; i++ {
		size := maxBytes * int64(i) / int64(points)
		out, cr := bestOf(ctx, o, lim, r.Reps, checkSecs, nil, "check", "-file", log.Path, "-bytes", fmt.Sprint(size))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p := ScalePoint{LogBytes: size, Status: cr.Status, PeakRSS: cr.PeakRSS, Err: cr.Err}
		if cr.Status == StatusOK {
			p.LogBytes, p.Ops, p.Seconds, p.Linearizable = out.Bytes, out.Ops, out.Seconds, out.Linearizable
			p.Edges, p.EdgesHB, p.EdgesRF, p.EdgesAux = out.Edges.Total(), out.Edges.HappensBefore, out.Edges.ReadsFrom, out.Edges.Auxiliary
			xs = append(xs, float64(p.LogBytes)/(1<<20))
			ts = append(ts, p.Seconds)
			es = append(es, float64(p.Edges))
		}
		r.Points = append(r.Points, p)
		o.progress("scale: %s: %s %.3f s, %d edges, peak %s", mib(p.LogBytes), p.Status, p.Seconds, p.Edges, mib(p.PeakRSS))
	}
	r.TimeFit, r.EdgesFit = linearFit(xs, ts), linearFit(xs, es)
	r.Linear = len(xs) >= 3 && r.TimeFit.R2 >= 0.99
	return r, nil
}

func (r *ScaleReport) Table() *Table {
	t := &Table{Cols: []string{"log_bytes", "log_mib", "ops", "edges", "edges_hb", "edges_rf", "edges_aux", "seconds", "mib_per_s", "peak_rss_mib", "status"}}
	for _, p := range r.Points {
		mb := float64(p.LogBytes) / (1 << 20)
		rate := 0.0
		if p.Seconds > 0 {
			rate = mb / p.Seconds
		}
		t.add(p.LogBytes, mb, p.Ops, p.Edges, p.EdgesHB, p.EdgesRF, p.EdgesAux, p.Seconds, rate, float64(p.PeakRSS)/(1<<20), p.Status)
	}
	return t
}

func (r *ScaleReport) last() (ScalePoint, bool) {
	for i := len(r.Points) - 1; i >= 0; i-- {
		if r.Points[i].Status == StatusOK {
			return r.Points[i], true
		}
	}
	return ScalePoint{}, false
}

func (r *ScaleReport) Headlines() []string {
	p, ok := r.last()
	if !ok {
		return []string{"No prefix could be analysed."}
	}
	lowRate, highRate := math.Inf(1), 0.0
	for _, q := range r.Points {
		if q.Status == StatusOK && q.Seconds > 0 {
			rate := float64(q.LogBytes) / (1 << 20) / q.Seconds
			lowRate, highRate = min(lowRate, rate), max(highRate, rate)
		}
	}
	h := []string{
		fmt.Sprintf("Largest prefix: %s, %d operations, analysed in %.2f s (%.0f MiB/s, %.2f M ops/s) with %d edges and %s peak RSS, GOMAXPROCS=%d.",
			mib(p.LogBytes), p.Ops, p.Seconds, float64(p.LogBytes)/(1<<20)/p.Seconds, float64(p.Ops)/p.Seconds/1e6, p.Edges, mib(p.PeakRSS), r.GOMAXPROCS),
		fmt.Sprintf("Time against log size: %.4f s/MiB %+.3f s, R² = %.4f (throughput %.0f to %.0f MiB/s over the prefixes); edges: %.0f per MiB, R² = %.4f. Target (analysis time linear in log size, R² ≥ 0.99): %s.",
			r.TimeFit.Slope, r.TimeFit.Intercept, r.TimeFit.R2, lowRate, highRate, r.EdgesFit.Slope, r.EdgesFit.R2, met(r.Linear)),
	}
	if r.Log.Bytes < 1<<30 {
		h = append(h, fmt.Sprintf("The paper's Figure 8 goes to 1 GB; this run stopped at %s (`--max-bytes 1G` for the full size).", mib(p.LogBytes)))
	}
	return h
}

func (r *ScaleReport) Explain() string {
	return fmt.Sprintf(`Reproduces Figure 8 of the OPODIS paper: the analysis time and the size of
the precedence graph against the size of the log. The log is %s. Each point
is the whole analyzer (pmlin check: stream, build the graph, check
properties i-iii) on a prefix of the log cut at a line end, in a child
process with GOMAXPROCS=%d, best of %d fresh processes; the time is the analyzer's own (process start
excluded), the peak RSS the child's (VmHWM). Edges are the
multigraph's: happens-before after ReduceHB, reads-from and auxiliary. The
dashed line is a least-squares fit.`, r.Log, r.GOMAXPROCS, r.Reps)
}

func (r *ScaleReport) Plot(dir string) ([]string, error) {
	var xs, ts, es, hb, rf, aux []float64
	for _, p := range r.Points {
		if p.Status != StatusOK {
			continue
		}
		xs = append(xs, float64(p.LogBytes)/(1<<20))
		ts = append(ts, p.Seconds)
		es = append(es, float64(p.Edges))
		hb = append(hb, float64(p.EdgesHB))
		rf = append(rf, float64(p.EdgesRF))
		aux = append(aux, float64(p.EdgesAux))
	}
	fitLine := func(f Fit) []float64 {
		if len(xs) == 0 {
			return nil
		}
		return []float64{f.Intercept, f.Slope*xs[len(xs)-1] + f.Intercept}
	}
	ends := []float64{0, 0}
	if len(xs) > 0 {
		ends[1] = xs[len(xs)-1]
	}
	p1 := newPlot("Analysis time against log size (OPODIS Fig. 8)", "log size (MiB)", fmt.Sprintf("seconds (GOMAXPROCS=%d)", r.GOMAXPROCS), false, false)
	if err := add(p1, series{name: "pmlin check", xs: xs, ys: ts, style: 0, noLine: true}); err != nil {
		return nil, err
	}
	if err := add(p1, series{name: fmt.Sprintf("fit: %.4f s/MiB, R²=%.4f", r.TimeFit.Slope, r.TimeFit.R2), xs: ends, ys: fitLine(r.TimeFit), style: 1, dashed: true}); err != nil {
		return nil, err
	}
	p1.Y.Min = 0
	p2 := newPlot("Precedence graph edges against log size", "log size (MiB)", "edges", false, false)
	for i, s := range []series{
		{name: "all edges", xs: xs, ys: es},
		{name: "happens-before (ReduceHB)", xs: xs, ys: hb},
		{name: "reads-from", xs: xs, ys: rf},
		{name: "auxiliary", xs: xs, ys: aux},
	} {
		s.style = i
		if err := add(p2, s); err != nil {
			return nil, err
		}
	}
	if err := add(p2, series{name: fmt.Sprintf("fit: %.0f edges/MiB, R²=%.4f", r.EdgesFit.Slope, r.EdgesFit.R2), xs: ends, ys: fitLine(r.EdgesFit), style: 4, dashed: true}); err != nil {
		return nil, err
	}
	p2.Y.Min = 0
	return savePlots(dir, map[string]*plot.Plot{"scale-time.png": p1, "scale-edges.png": p2}, "scale-time.png", "scale-edges.png")
}

// savePlots saves the named plots in the given order.
func savePlots(dir string, plots map[string]*plot.Plot, order ...string) ([]string, error) {
	var names []string
	for _, n := range order {
		if _, err := savePlot(plots[n], dir, n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}
