package crash

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/pmem"
)

// Verdict is a run and the analyzer's decision on its history.
type Verdict struct {
	Run  *Result
	Mode history.Mode
	// Check is the analyzer's result; nil if it could not decide.
	Check *analyzer.Result
	// Analysis is the analysis that reached Check, with the graph behind
	// it, for reports and shrinking (nil if it could not decide). Together
	// with the history it spares reading and analysing the history again.
	Analysis *analyzer.Analysis
	// Undecided is the analyzer's *AssumptionError or *UndecidedError,
	// when it could not decide (not a violation, but worth a look).
	Undecided error
	// Anomalies are the run's own (stuck, corrupt) and the analyzer's.
	Anomalies []analyzer.Anomaly
	// Objects is the exact checker's verdict on a version 2 history (a
	// program's objects of any model, pmlin fuzz --exec), in place of
	// Check and Analysis; nil otherwise.
	Objects *report.ObjectsVerdict
}

// Violated reports whether anything is wrong.
func (v *Verdict) Violated() bool { return len(v.Anomalies) > 0 }

// Check records a run of c into buf (which it resets) and decides the
// history with the analyzer in the given mode. It returns an error if the
// run cannot be made or the history does not parse (a bug of the driver).
func Check(ctx context.Context, c Config, mode history.Mode, buf *bytes.Buffer) (*Verdict, error) {
	buf.Reset()
	res, err := Run(ctx, c, buf)
	if err != nil {
		return nil, err
	}
	return Decide(ctx, res, buf.Bytes(), mode)
}

// scratch is what a fuzz job keeps from one run to the next: the history
// in memory, and the last run's region, renewed for the next run
// (pmem.Region.Renew) rather than unmapped and mapped again.
type scratch struct {
	rec   history.Recording
	spare *pmem.Region
	// drv is the last run's driver, whose log chunks the next run's
	// driver fills again (driver.Driver.Recycle).
	drv *driver.Driver
	// replay renders the runs' flags (Config.Flags).
	replay replayFlags
	// done is the last run's analysis once nobody uses it (no finding):
	// the next run's fills its arrays again (analyzer.Options.Recycle).
	done *analyzer.Analysis
}

// flags is c.Flags(), with sc's flag set if sc is not nil.
func (sc *scratch) flags(c Config) string {
	if sc == nil {
		return c.Flags()
	}
	return sc.replay.line(c)
}

// close releases the spare region and the last driver's workers.
func (sc *scratch) close() {
	if sc.spare != nil {
		sc.spare.Close()
		sc.spare = nil
	}
	if sc.drv != nil {
		sc.drv.Close()
		sc.drv = nil
	}
}

// checkRecording is Check with the history kept in sc.rec (which it
// resets), as fuzz makes its runs: the analyzer reads the recorded events,
// with the line numbers of the text, and the text is written only if it is
// wanted (Recording.WriteTo).
func checkRecording(ctx context.Context, c Config, mode history.Mode, sc *scratch) (*Verdict, error) {
	rec := &sc.rec
	rec.Reset()
	res, err := runTo(ctx, c, record.NewRecorder(rec), sc)
	if err != nil {
		return nil, err
	}
	if c.isObject() {
		// Version 2: the exact checker is given the history built from
		// the recorded operations, as ReadV2 of their text would build it.
		h, err := rec.History(runName)
		if err != nil {
			return nil, fmt.Errorf("crash: the gathered history does not read: %w", err)
		}
		return decideV2History(ctx, res, h, lin.Options{Mode: mode, MaxStates: FuzzObjectStates, MaxMemory: FuzzObjectMemory})
	}
	done := sc.done
	sc.done = nil
	return decide(ctx, res, rec.Reader("<run>", history.Options{}), rec.Size(), mode, done)
}

// Decide checks a recorded history with the analyzer (a version 2
// history, of a data-structure target: with the exact checker) and adds
// the run's own anomalies.
func Decide(ctx context.Context, res *Result, hist []byte, mode history.Mode) (*Verdict, error) {
	if isV2(hist) {
		return decideV2(ctx, res, hist, mode)
	}
	return decide(ctx, res, history.NewReader(bytes.NewReader(hist), "<run>", history.Options{}), int64(len(hist)), mode, nil)
}

// decide is Decide of the history r reads, about size bytes long,
// filling the arrays of done (an analysis nobody uses any more; nil: none)
// again.
func decide(ctx context.Context, res *Result, r *history.Reader, size int64, mode history.Mode, done *analyzer.Analysis) (*Verdict, error) {
	v := &Verdict{Run: res, Mode: mode}
	v.Anomalies = append(v.Anomalies, res.Anomalies...)
	a, err := analyzer.Analyze(ctx, r, analyzer.Options{Mode: mode, SizeHint: size, Recycle: done})
	var ae *analyzer.AssumptionError
	var ue *analyzer.UndecidedError
	switch {
	case errors.As(err, &ae), errors.As(err, &ue):
		v.Undecided = err
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("crash: the recorded history does not check: %w", err)
	default:
		v.Analysis, v.Check = a, a.Result
		v.Anomalies = append(v.Anomalies, a.Result.Anomalies...)
	}
	return v, nil
}
