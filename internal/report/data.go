package report

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
)

// Options bound what DOT and HTML show.
type Options struct {
	// MaxAnomalies is the number of root anomalies drawn (default 5),
	// each with those it implies (analyzer.Anomaly.Root) listed under it;
	// the other roots are listed in text.
	MaxAnomalies int
	// Neighbourhood bounds each anomaly's graph and timeline.
	Neighbourhood analyzer.NeighbourhoodOptions
	// Sample is the number of operations a report on a linearizable
	// history shows (default 40).
	Sample int
}

// Data is what DOT and HTML draw: the verdict, the neighbourhoods of the
// first anomalies, and the full data of the operations shown, re-read
// from the input.
type Data struct {
	Name   string
	Result *analyzer.Result
	// Neighbourhoods of the first root anomalies (analyzer.Anomaly.Root).
	Neighbourhoods []*analyzer.Neighbourhood
	// Sample: for a linearizable history, the first operations.
	Sample []analyzer.OpInfo
	// Ops are the operations shown, by invocation line, as the input has
	// them (nil when the input could not be re-read).
	Ops map[int64]*history.Op
	// Crashes are the crash lines within the spans shown.
	Crashes []int64
}

// maxCrashLines bounds the crash lines a report keeps.
const maxCrashLines = 2000

// Collect computes what DOT and HTML draw, reading the values of the
// operations shown from the events open gives again (a file's, a
// Recording's). open may be nil (the input cannot be re-read): the
// drawings then lack values.
func Collect(ctx context.Context, a *analyzer.Analysis, name string, open history.Source, opts Options) (*Data, error) {
	if opts.MaxAnomalies <= 0 {
		opts.MaxAnomalies = 5
	}
	if opts.Sample <= 0 {
		opts.Sample = 40
	}
	d := &Data{Name: name, Result: a.Result}
	var spans [][2]int64
	var lines []int64
	span := func(ops []analyzer.OpInfo) {
		if len(ops) == 0 {
			return
		}
		lo, hi := int64(math.MaxInt64), int64(0)
		for _, o := range ops {
			if o.Line == 0 {
				continue
			}
			lines = append(lines, o.Line)
			lo = min(lo, o.Line)
			hi = max(hi, o.Line, o.RetLine, o.CrashLine)
		}
		if hi > 0 {
			spans = append(spans, [2]int64{lo, hi})
		}
	}
	for k, an := range a.Result.Anomalies {
		if len(d.Neighbourhoods) == opts.MaxAnomalies {
			break
		}
		if an.Root != nil {
			continue // drawn with its root, which implies it
		}
		nb, err := a.Neighbourhood(k, opts.Neighbourhood)
		if err != nil {
			return nil, err
		}
		d.Neighbourhoods = append(d.Neighbourhoods, nb)
		span(nb.Timeline)
		span(nb.Nodes)
	}
	if len(a.Result.Anomalies) == 0 {
		d.Sample = a.FirstOps(opts.Sample)
		span(d.Sample)
	}
	if open == nil || len(lines) == 0 {
		return d, nil
	}
	r, done, err := open()
	if err != nil {
		return nil, err
	}
	defer done()
	kept := 0
	keep := func(line int64) bool {
		for _, s := range spans {
			if line >= s[0] && line <= s[1] && kept < maxCrashLines {
				kept++
				return true
			}
		}
		return false
	}
	h, crashes, err := history.Extract(ctx, r, lines, keep)
	if err != nil {
		return nil, fmt.Errorf("re-reading %s: %w", name, err)
	}
	d.Ops = make(map[int64]*history.Op, len(h.Ops))
	for i := range h.Ops {
		d.Ops[h.Ops[i].Line] = &h.Ops[i]
	}
	d.Crashes = crashes
	return d, nil
}

// crashesIn are the crash lines in [lo, hi].
func (d *Data) crashesIn(lo, hi int64) []int64 {
	i, _ := slices.BinarySearch(d.Crashes, lo)
	j, _ := slices.BinarySearch(d.Crashes, hi+1)
	return d.Crashes[i:j]
}
