package crash

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/objcheck"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/model"
)

// NotLinearizable is the anomaly of a version 2 history (a program's
// objects of any model, recorded with pmlin_inv_op) that the exact checker
// (internal/lin) finds not linearizable: one per object.
const NotLinearizable analyzer.Kind = "nonlinearizable"

// isV2 says whether a gathered history is of version 2: its logs declared
// objects (docs/history-format.md, "Version 2").
func isV2(hist []byte) bool {
	return history.Version(bufio.NewReader(bytes.NewReader(hist))) == 2
}

// decideV2 decides a version 2 history with the exact checker in mode, as
// `pmlin check` does, and makes each object it finds not linearizable an
// anomaly of the run, its explanation the checker's (the witness
// operations by line, the state the longest correct order reached).
func decideV2(ctx context.Context, res *Result, hist []byte, mode history.Mode) (*Verdict, error) {
	return decideV2With(ctx, res, hist, lin.Options{Mode: mode})
}

// decideV2With is decideV2 with the checker's options (their Mode the
// run's).
func decideV2With(ctx context.Context, res *Result, hist []byte, opts lin.Options) (*Verdict, error) {
	h, err := history.ReadV2(bytes.NewReader(hist), runName)
	if err != nil {
		return nil, fmt.Errorf("crash: the gathered history does not read: %w", err)
	}
	return decideV2History(ctx, res, h, opts)
}

// runName is the name of a run's history in its errors and reports.
const runName = "<run>"

// decideV2History is decideV2With of the history h, read or built from a
// recording.
func decideV2History(ctx context.Context, res *Result, h *model.History, opts lin.Options) (*Verdict, error) {
	mode := opts.Mode
	v := &Verdict{Run: res, Mode: mode}
	v.Anomalies = append(v.Anomalies, res.Anomalies...)
	const name = runName
	if err := objcheck.Validate(h, nil); err != nil {
		// The program declared an unknown model, or called an operation
		// its model does not have: the program's error, a run's anomaly.
		var oe *objcheck.Error
		line := int64(0)
		if errors.As(err, &oe) {
			line = oe.Line
		}
		v.Anomalies = append(v.Anomalies, analyzer.Anomaly{Kind: Corrupt, Ops: []int64{}, Words: []uint64{},
			Explanation: fmt.Sprintf("the recorded history is not one its models read (line %d): %v", line, err)})
		return v, nil
	}
	r, err := lin.Check(ctx, h, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("crash: the recorded history does not check: %w", err)
	}
	if r.Verdict == lin.Undecided {
		for _, or := range r.Objects {
			if or.Verdict == lin.Undecided {
				v.Undecided = &analyzer.UndecidedError{File: name, Line: objcheck.ObjectLine(h, or.Object), Msg: or.Reason}
				break
			}
		}
	}
	v.Objects = report.NewObjectsVerdict(h, name, r)
	for _, a := range v.Objects.Anomalies {
		v.Anomalies = append(v.Anomalies, analyzer.Anomaly{Kind: NotLinearizable, Ops: append([]int64{}, a.Ops...),
			Words: append([]uint64{}, a.Words...), Explanation: fmt.Sprintf("object %s (%s): %s", a.Object, a.Model, a.Explanation)})
	}
	return v, nil
}
