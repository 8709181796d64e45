package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// TargetPoint is one target's throughput at one thread count under the
// driver's free scheduler, persistence emulation on: without recording
// and recorded as a text history written to a file. The rates are medians
// over the rounds; the overhead is taken within each round (the two sides
// run one after the other), its median reported.
type TargetPoint struct {
	Target          string  `json:"target"`
	Model           string  `json:"model"` // "words" for a primitive
	Threads         int     `json:"threads"`
	Ops             int     `json:"ops_per_side"`
	OpsPerSecPlain  float64 `json:"ops_per_sec_plain"`
	OpsPerSecLogged float64 `json:"ops_per_sec_logged"`
	Overhead        float64 `json:"overhead"`
	HistoryBytes    int64   `json:"history_bytes"`
}

// TargetsReport is the targets suite's result.
type TargetsReport struct {
	Meta
	Reps   int           `json:"reps"`
	Points []TargetPoint `json:"points"`
}

// Words and k of a primitive's workload in this suite, and the operations
// of one side of a round.
const (
	targetsWords = 64
	targetsK     = 2
	targetsOps   = 40_000
)

// runTargets measures every target of o.Targets at every thread count.
func runTargets(ctx context.Context, o *Options) (Report, error) {
	if len(o.Targets) == 0 {
		return nil, fmt.Errorf("no targets to measure")
	}
	r := &TargetsReport{Reps: o.reps(3)}
	ops := targetsOps
	if len(o.Sizes) > 0 {
		ops = o.Sizes[0]
	}
	for _, t := range o.Targets {
		for _, th := range orInts(o.Threads, []int{1, 2}) {
			p := TargetPoint{Target: t.Name, Model: orString(t.Model, "words"), Threads: th, Ops: ops}
			var plain, logged, over []float64
			for rep := range r.Reps {
				a, _, err := o.targetSide(ctx, t, th, ops, false, uint64(rep))
				if err != nil {
					return nil, fmt.Errorf("target %s, %d threads, unrecorded: %w", t.Name, th, err)
				}
				b, n, err := o.targetSide(ctx, t, th, ops, true, uint64(rep))
				if err != nil {
					return nil, fmt.Errorf("target %s, %d threads, recorded: %w", t.Name, th, err)
				}
				plain, logged = append(plain, a), append(logged, b)
				over = append(over, 1-b/a)
				p.HistoryBytes = n
			}
			p.OpsPerSecPlain, p.OpsPerSecLogged, p.Overhead = median(plain), median(logged), median(over)
			o.progress("target %s, %d threads: %.0f ops/s unrecorded, %.0f recorded", t.Name, th, p.OpsPerSecPlain, p.OpsPerSecLogged)
			r.Points = append(r.Points, p)
		}
	}
	return r, nil
}

// targetSide runs ops operations of t's workload on a fresh instance with
// threads workers under the free scheduler, recorded or not, and returns
// the operations per second and the history's bytes. The region, the
// instance and the driver are made before the clock starts.
func (o *Options) targetSide(ctx context.Context, t *target.Target, threads, ops int, recorded bool, rep uint64) (float64, int64, error) {
	tc := target.Config{Workers: threads, Params: map[string]string{}}
	for _, p := range t.Params {
		tc.Params[p.Name] = p.Default
	}
	var w *driver.ObjectWorkload
	if t.Model == "" {
		tc.Words, tc.MaxK = targetsWords, targetsK
	} else {
		var err error
		if w, err = driver.NewObjectWorkload(t.Name, t.Model, t.Mix, driver.DefaultKeys); err != nil {
			return 0, 0, err
		}
		tc.Ops = ops
		if driver.KeyedModel(w.Model) {
			tc.Keys = w.Keys
		}
	}
	n, err := t.Size(tc)
	if err != nil {
		return 0, 0, err
	}
	reg, err := pmem.NewMemory(n, pmem.Options{Emulate: true})
	if err != nil {
		return 0, 0, err
	}
	defer reg.Close()
	var rec *record.Recorder
	var bw *bufio.Writer
	var path string
	if recorded {
		path = filepath.Join(o.work(), fmt.Sprintf("pmlin-bench-%s-%d.hist", t.Name, os.Getpid()))
		f, err := os.Create(path)
		if err != nil {
			return 0, 0, err
		}
		defer os.Remove(path)
		defer f.Close()
		bw = bufio.NewWriterSize(f, 1<<20)
		rec = record.NewRecorder(history.NewWriter(bw))
	}
	dc := driver.DefaultConfig()
	dc.Threads, dc.Sched, dc.Seed = threads, driver.Free, o.seed()+rep
	var d *driver.Driver
	if t.Model == "" {
		dc.Words, dc.K = targetsWords, targetsK
		inst, err := t.New(reg, tc)
		if err != nil {
			return 0, 0, err
		}
		if rec != nil {
			rec.Header()
		}
		d, err = driver.New(dc, inst, reg, rec)
		if err != nil {
			return 0, 0, err
		}
	} else {
		obj, err := t.NewObject(reg, tc)
		if err != nil {
			return 0, 0, err
		}
		if rec != nil {
			if err := rec.SetObject(w); err != nil {
				return 0, 0, err
			}
			rec.Header()
		}
		d, err = driver.NewObject(dc, w, obj, reg, rec)
		if err != nil {
			return 0, 0, err
		}
	}
	quota := make([]int, threads)
	for i := range quota {
		quota[i] = max(1, ops/threads)
	}
	start := time.Now()
	res, err := d.Segment(ctx, quota, driver.CrashPoint{})
	if err == nil && rec != nil {
		rec.End()
		err = bw.Flush()
	}
	secs := time.Since(start).Seconds()
	switch {
	case err != nil:
		return 0, 0, err
	case res.Stuck != nil:
		return 0, 0, fmt.Errorf("%v", res.Stuck)
	case res.Failed != nil:
		return 0, 0, fmt.Errorf("%v", res.Failed)
	}
	var size int64
	if recorded {
		if fi, err := os.Stat(path); err == nil {
			size = fi.Size()
		}
	}
	return float64(res.Invoked) / secs, size, ctx.Err()
}

func (r *TargetsReport) Table() *Table {
	t := &Table{Cols: []string{"target", "model", "threads", "ops_per_side", "ops_per_sec_plain", "ops_per_sec_logged", "overhead", "history_bytes"}}
	for _, p := range r.Points {
		t.add(p.Target, p.Model, p.Threads, p.Ops, p.OpsPerSecPlain, p.OpsPerSecLogged, p.Overhead, p.HistoryBytes)
	}
	return t
}

func (r *TargetsReport) Headlines() []string {
	var h []string
	for _, p := range r.Points {
		h = append(h, fmt.Sprintf("%s (%s), threads %d: %.2f M ops/s unrecorded, %.2f M recorded (overhead %.0f %%, the median of rounds).",
			p.Target, p.Model, p.Threads, p.OpsPerSecPlain/1e6, p.OpsPerSecLogged/1e6, 100*p.Overhead))
	}
	return h
}

func (r *TargetsReport) Explain() string {
	return fmt.Sprintf(`Throughput of every target pmlin knows (the primitives and the data
structures), as pmlin run drives them: the driver's free scheduler, the
persistence emulation on (per-line store logs, flush and fence recorded),
no crash. Each point runs, %d times in turn, a fresh instance without
recording and one recorded as a text history written to a file; the rates
and the overhead (1 - recorded / unrecorded, taken within each round) are
medians. A primitive's workload is pmlin run's reads and %d-word CAS on %d
words; a data structure's is drawn from its model (its target's mix, %d
keys for a map or a set).`, r.Reps, targetsK, targetsWords, driver.DefaultKeys)
}

// Plot draws one panel per target: operations per second against threads,
// unrecorded and recorded.
func (r *TargetsReport) Plot(dir string) ([]string, error) {
	var names []string
	for _, p := range r.Points {
		if !slices.Contains(names, p.Target) {
			names = append(names, p.Target)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	row := make([]*plot.Plot, len(names))
	for i, name := range names {
		pl := newPlot(name, "threads", "M operations/s", false, false)
		countAxis(&pl.X)
		for j, logged := range []bool{false, true} {
			var xs, ys []float64
			for _, p := range r.Points {
				if p.Target == name {
					y := p.OpsPerSecPlain
					if logged {
						y = p.OpsPerSecLogged
					}
					xs, ys = append(xs, float64(p.Threads)), append(ys, y/1e6)
				}
			}
			label := map[bool]string{false: "unrecorded", true: "recorded (text)"}[logged]
			if err := add(pl, series{name: label, xs: xs, ys: ys, style: j}); err != nil {
				return nil, err
			}
		}
		row[i] = pl
	}
	n, err := saveGrid([][]*plot.Plot{row}, dir, "targets.png")
	if err != nil {
		return nil, err
	}
	return []string{n}, nil
}
