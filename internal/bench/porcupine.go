package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gonum.org/v1/plot"
)

// PorcupinePoint is one history given to both tools.
type PorcupinePoint struct {
	Procs    int   `json:"procs"`
	Ops      int64 `json:"ops"`
	LogBytes int64 `json:"log_bytes"`
	// Seconds are each tool's own time from opening the file to the
	// verdict (process start excluded); for a run killed at a limit, the
	// child's wall time until then. PeakRSS is the child's peak resident
	// memory.
	PmlinSeconds     float64 `json:"pmlin_seconds"`
	PmlinPeakRSS     int64   `json:"pmlin_peak_rss_bytes"`
	PmlinStatus      string  `json:"pmlin_status"`
	PorcupineSeconds float64 `json:"porcupine_seconds"`
	PorcupinePeakRSS int64   `json:"porcupine_peak_rss_bytes"`
	// PorcupineStatus is ok, timeout, oom, skipped (not run: a smaller
	// size timed out or ran out of memory), error, or illegal (a wrong
	// verdict: every history here is linearizable).
	PorcupineStatus string `json:"porcupine_status"`
	// Partitions are the address components Porcupine checked apart.
	Partitions int `json:"partitions,omitempty"`
	// Speedup is PorcupineSeconds / PmlinSeconds, when both finished.
	Speedup float64 `json:"speedup"`
	// MemoryRatio is PorcupinePeakRSS / PmlinPeakRSS, when both finished.
	MemoryRatio float64 `json:"memory_ratio"`
	Err         string  `json:"error,omitempty"`
}

// PorcupineReport is the porcupine suite's result.
type PorcupineReport struct {
	Meta
	Timeout    float64          `json:"timeout_seconds"`
	MemLimit   int64            `json:"mem_limit_bytes"`
	GOMAXPROCS int              `json:"gomaxprocs"`
	Reps       int              `json:"reps"`
	Words      int              `json:"words"`
	K          int              `json:"k"`
	Points     []PorcupinePoint `json:"points"`
	// The target: at 100k operations and 8 processes, pmlin at least 20
	// times faster.
	SpeedupAt100k8 float64 `json:"speedup_at_100k_8procs"`
	// PmlinOnly counts the histories pmlin decided and Porcupine did not
	// (timeout or out of memory).
	PmlinOnly int `json:"pmlin_only"`
}

// Defaults of porcupine.
var (
	DefaultPorcupineSizes = []int{1000, 10_000, 100_000}
	DefaultPorcupineProcs = []int{4, 8, 16, 32}
)

// DefaultPorcupineTimeout bounds one Porcupine run.
const DefaultPorcupineTimeout = 60 * time.Second

func runPorcupine(ctx context.Context, o *Options) (Report, error) {
	sizes := orInts(o.Sizes, DefaultPorcupineSizes)
	procsList := orInts(o.Procs, DefaultPorcupineProcs)
	timeout := o.timeout(DefaultPorcupineTimeout)
	r := &PorcupineReport{Timeout: timeout.Seconds(), MemLimit: o.memLimit(), GOMAXPROCS: o.gomaxprocs(0), Words: logWords, K: o.k(), Reps: o.reps(3)}
	// Porcupine gets its own timeout; the child is killed only if it
	// overruns that by a margin (reading the file comes first).
	porcLim := limits{timeout: timeout + timeout/2 + 10*time.Second, mem: r.MemLimit, gomaxprocs: r.GOMAXPROCS}
	pmlinLim := limits{timeout: timeout, mem: r.MemLimit, gomaxprocs: r.GOMAXPROCS}
	for _, procs := range procsList {
		failed := ""
		for _, n := range sizes {
			log, err := o.genLog(0, n, procs)
			if err != nil {
				return nil, err
			}
			p := PorcupinePoint{Procs: procs, Ops: log.Ops, LogBytes: log.Bytes}
			po, cr := bestOf(ctx, o, pmlinLim, r.Reps, checkSecs, nil, "check", "-file", log.Path)
			p.PmlinStatus, p.PmlinPeakRSS, p.PmlinSeconds = cr.Status, cr.PeakRSS, cr.Wall
			if cr.Status == StatusOK {
				p.PmlinSeconds = po.Seconds
				if !po.Linearizable {
					p.PmlinStatus = "illegal"
				}
			} else {
				p.Err = "pmlin: " + cr.Err
			}
			if failed != "" && !o.NoSkip {
				p.PorcupineStatus = StatusSkipped
				p.Err = failed
			} else {
				qo, cq := bestOf(ctx, o, porcLim, r.Reps, func(q *porcOut) float64 { return q.Seconds },
					func(q *porcOut) bool { return q.Result != "ok" }, "porcupine", "-file", log.Path, "-timeout", timeout.String())
				p.PorcupineStatus, p.PorcupinePeakRSS, p.PorcupineSeconds = cq.Status, cq.PeakRSS, cq.Wall
				if cq.Status == StatusOK {
					p.PorcupineSeconds, p.Partitions = qo.Seconds, qo.Partitions
					switch qo.Result {
					case "unknown":
						p.PorcupineStatus = StatusTimeout
					case "illegal":
						p.PorcupineStatus = "illegal"
					}
				} else if p.Err == "" {
					p.Err = "porcupine: " + cq.Err
				}
				if p.PorcupineStatus == StatusTimeout || p.PorcupineStatus == StatusOOM {
					failed = fmt.Sprintf("Porcupine not run: it already hit the limit (%s) at %d operations", p.PorcupineStatus, n)
				}
			}
			log.remove()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if p.PmlinStatus == StatusOK && p.PorcupineStatus == StatusOK && p.PmlinSeconds > 0 {
				p.Speedup = p.PorcupineSeconds / p.PmlinSeconds
				if p.PmlinPeakRSS > 0 {
					p.MemoryRatio = float64(p.PorcupinePeakRSS) / float64(p.PmlinPeakRSS)
				}
			}
			if p.PmlinStatus == StatusOK && (p.PorcupineStatus == StatusTimeout || p.PorcupineStatus == StatusOOM || p.PorcupineStatus == StatusSkipped) {
				r.PmlinOnly++
			}
			if procs == 8 && p.Ops == 100_000 {
				r.SpeedupAt100k8 = p.Speedup
			}
			r.Points = append(r.Points, p)
			o.progress("porcupine: %d procs, %d ops: pmlin %s %.3f s %s; Porcupine %s %.3f s %s",
				procs, p.Ops, p.PmlinStatus, p.PmlinSeconds, mib(p.PmlinPeakRSS), p.PorcupineStatus, p.PorcupineSeconds, mib(p.PorcupinePeakRSS))
		}
	}
	return r, nil
}

func (r *PorcupineReport) Table() *Table {
	t := &Table{Cols: []string{"procs", "ops", "log_bytes", "pmlin_seconds", "pmlin_peak_rss_mib", "pmlin_status",
		"porcupine_seconds", "porcupine_peak_rss_mib", "porcupine_status", "partitions", "speedup", "memory_ratio"}}
	for _, p := range r.Points {
		ps, pm := fmtFloat(p.PorcupineSeconds), fmtFloat(float64(p.PorcupinePeakRSS)/(1<<20))
		if p.PorcupineStatus == StatusSkipped {
			ps, pm = "", ""
		}
		t.add(p.Procs, p.Ops, p.LogBytes, p.PmlinSeconds, float64(p.PmlinPeakRSS)/(1<<20), p.PmlinStatus,
			ps, pm, p.PorcupineStatus, p.Partitions, p.Speedup, p.MemoryRatio)
	}
	return t
}

func (r *PorcupineReport) Headlines() []string {
	var h []string
	found := false
	for _, p := range r.Points {
		if p.Procs == 8 && p.Ops == 100_000 {
			found = true
			if p.PorcupineStatus == StatusOK {
				h = append(h, fmt.Sprintf("At 100k operations and 8 processes: pmlin %.3f s and %s, Porcupine %.2f s and %s: pmlin %.0f× faster with %.0f× less memory. Target (≥ 20× faster): %s.",
					p.PmlinSeconds, mib(p.PmlinPeakRSS), p.PorcupineSeconds, mib(p.PorcupinePeakRSS), p.Speedup, p.MemoryRatio, met(p.Speedup >= 20)))
			} else {
				h = append(h, fmt.Sprintf("At 100k operations and 8 processes: pmlin %.3f s and %s; Porcupine did not finish (%s). Target (≥ 20× faster): met.",
					p.PmlinSeconds, mib(p.PmlinPeakRSS), p.PorcupineStatus))
			}
		}
	}
	if !found {
		h = append(h, "The 100k-operation, 8-process history was not in this run (the target's point).")
	}
	var beyond []string
	for _, p := range r.Points {
		if p.PmlinStatus == StatusOK && p.PorcupineStatus != StatusOK {
			beyond = append(beyond, fmt.Sprintf("%d ops/%d procs (Porcupine %s, pmlin %.2f s)", p.Ops, p.Procs, p.PorcupineStatus, p.PmlinSeconds))
		}
	}
	if len(beyond) > 0 {
		h = append(h, fmt.Sprintf("pmlin decided %d histories where Porcupine timed out (%.0f s) or ran out of memory (%s), or was not run after that: %s. Target: met.",
			len(beyond), r.Timeout, mib(r.MemLimit), strings.Join(beyond, "; ")))
	} else {
		h = append(h, fmt.Sprintf("Porcupine decided every history of this run within %.0f s and %s. Target (sizes or concurrency where Porcupine fails): MISSED at these sizes.", r.Timeout, mib(r.MemLimit)))
	}
	return h
}

func (r *PorcupineReport) Explain() string {
	g := "every core"
	if r.GOMAXPROCS > 0 {
		g = fmt.Sprintf("GOMAXPROCS=%d", r.GOMAXPROCS)
	}
	return fmt.Sprintf(`pmlin beside Porcupine (github.com/anishathalye/porcupine v1.3.1) on the
same histories: linearizable, crash-free histories from pmlin gen (%d words,
1..%d words per operation, half reads) with 4 to 32 processes, each
operation taking effect at a random point of its interval, so up to that
many overlap. Porcupine gets the word-array model of internal/porcmodel and
its partition by address components (the P-compositionality it allows).
Each tool runs in its own child process (%s) and is timed from opening the
file to the verdict, best of %d fresh processes; peak memory is the
child's maximum resident set (VmHWM), the largest of the runs. Porcupine has %.0f s (its own timeout, the child is killed
if it overruns it) and both %s of resident memory: a run beyond is shown as
timeout or oom, and larger sizes at the same concurrency are then marked
skipped.`, r.Words, r.K, g, r.Reps, r.Timeout, mib(r.MemLimit))
}

func (r *PorcupineReport) Plot(dir string) ([]string, error) {
	var procsList []int
	for _, p := range r.Points {
		if len(procsList) == 0 || procsList[len(procsList)-1] != p.Procs {
			procsList = append(procsList, p.Procs)
		}
	}
	if len(procsList) == 0 {
		return nil, nil
	}
	rows := 1
	if len(procsList) > 3 {
		rows = 2
	}
	cols := (len(procsList) + rows - 1) / rows
	grid := func(title, ylabel string, limit float64, limitName string, value func(p PorcupinePoint, pmlin bool) float64) ([][]*plot.Plot, error) {
		g := make([][]*plot.Plot, rows)
		for i := range g {
			g[i] = make([]*plot.Plot, cols)
		}
		for i, procs := range procsList {
			pl := newPlot(fmt.Sprintf("%s, %d processes", title, procs), "operations", ylabel, true, true)
			var xs, pm, pc, tx, ty, ox, oy []float64
			for _, p := range r.Points {
				if p.Procs != procs {
					continue
				}
				x := float64(p.Ops)
				if p.PmlinStatus == StatusOK {
					xs = append(xs, x)
					pm = append(pm, value(p, true))
				}
				switch p.PorcupineStatus {
				case StatusOK:
					pc = append(pc, value(p, false))
				case StatusTimeout:
					tx, ty = append(tx, x), append(ty, value(p, false))
				case StatusOOM:
					ox, oy = append(ox, x), append(oy, value(p, false))
				}
			}
			var cx []float64
			for _, p := range r.Points {
				if p.Procs == procs && p.PorcupineStatus == StatusOK {
					cx = append(cx, float64(p.Ops))
				}
			}
			for _, s := range []series{
				{name: "pmlin", xs: xs, ys: pm, style: 1},
				{name: "Porcupine", xs: cx, ys: pc, style: 0},
				{name: "Porcupine timeout", xs: tx, ys: ty, noLine: true, glyph: timeoutGlyph, color: red},
				{name: "Porcupine out of memory", xs: ox, ys: oy, noLine: true, glyph: oomGlyph, color: red},
			} {
				if err := add(pl, s); err != nil {
					return nil, err
				}
			}
			if len(tx)+len(ox) > 0 {
				var lx []float64
				for _, p := range r.Points {
					if p.Procs == procs {
						lx = append(lx, float64(p.Ops))
					}
				}
				if err := add(pl, series{name: limitName, xs: []float64{lx[0], lx[len(lx)-1]}, ys: []float64{limit, limit}, dashed: true, color: red}); err != nil {
					return nil, err
				}
			}
			g[i/cols][i%cols] = pl
		}
		return g, nil
	}
	tg, err := grid("Time", "seconds", r.Timeout, fmt.Sprintf("time limit (%.0f s)", r.Timeout), func(p PorcupinePoint, pmlin bool) float64 {
		if pmlin {
			return p.PmlinSeconds
		}
		return p.PorcupineSeconds
	})
	if err != nil {
		return nil, err
	}
	mg, err := grid("Peak memory", "peak RSS (MiB)", float64(r.MemLimit)/(1<<20), "memory limit ("+mib(r.MemLimit)+")", func(p PorcupinePoint, pmlin bool) float64 {
		if pmlin {
			return float64(p.PmlinPeakRSS) / (1 << 20)
		}
		return float64(p.PorcupinePeakRSS) / (1 << 20)
	})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, x := range []struct {
		name string
		g    [][]*plot.Plot
	}{{"porcupine-time.png", tg}, {"porcupine-memory.png", mg}} {
		n, err := saveGrid(x.g, dir, x.name)
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}
