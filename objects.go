package pmlin

import (
	"context"
	"errors"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/objcheck"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/model"
)

// checkObjects is Check of a history of objects: its steps merged by
// timestamp as a word array's are, laid out as a version 2 history, and
// decided by the exact checker for any model (internal/lin), object by
// object.
func checkObjects(ctx context.Context, h History, opts Options) (*Result, error) {
	mh, lay, byModel, err := layObjects(h, opts.Name)
	if err != nil {
		return nil, err
	}
	if err := objcheck.Validate(mh, opts.Models); err != nil {
		var oe *objcheck.Error
		errors.As(err, &oe)
		e := &Error{Op: -1, Crash: -1, Err: history.ErrIllFormed, Msg: oe.Msg}
		if oe.Op >= 0 {
			e.Op = byModel[oe.Op]
		}
		return nil, e
	}
	// lay names mh's events by the caller's indexes (mh's lines are
	// its text's, as lay's are): lin's sentences and errors name
	// "operation 3", "crash 1", never a line of a text not written.
	res, err := lin.Check(ctx, mh, lin.Options{Mode: opts.Mode, Models: opts.Models, Names: lay})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// An operation lin refuses (a model of the caller's whose Validate
		// changed its mind since objcheck's) is blamed by the caller's index.
		if oe := (*lin.OpError)(nil); errors.As(err, &oe) {
			return nil, opError(byModel[oe.Op], history.ErrIllFormed, "%v", oe.Err)
		}
		return nil, &Error{Op: -1, Crash: -1, Err: history.ErrIllFormed, Msg: err.Error()}
	}
	if res.Verdict == lin.Undecided {
		for _, or := range res.Objects {
			if or.Verdict == lin.Undecided {
				ue := &analyzer.UndecidedError{File: opts.Name, Line: objcheck.ObjectLine(mh, or.Object), Msg: or.Reason, Operations: int64(len(mh.Ops))}
				return nil, &Error{Op: -1, Crash: -1, Err: ue, Msg: "undecided: " + or.Reason}
			}
		}
	}
	ov := report.NewObjectsVerdict(mh, opts.Name, res)
	out := &Result{Linearizable: res.Verdict == lin.Linearizable, Mode: opts.Mode, Engine: ov.Engine,
		name: opts.Name, ov: ov, lay: lay}
	for _, or := range res.Objects {
		x := or.Explanation
		if or.Verdict != lin.Violation || x == nil {
			continue
		}
		an := Anomaly{Kind: "nonlinearizable", Explanation: x.Sentence}
		for _, r := range x.Ops {
			an.Ops = append(an.Ops, byModel[r.Index])
		}
		if out.Witness == nil {
			out.Witness = an.Ops
		}
		out.Anomalies = append(out.Anomalies, an)
	}
	// A synchronisation object's operations stuck (not progressible):
	// anomalies of kind "stuck", the operation then its partner, though
	// the history is linearizable.
	for _, or := range res.Objects {
		for _, st := range or.Stuck {
			out.Anomalies = append(out.Anomalies, Anomaly{Kind: "stuck", Explanation: st.Sentence,
				Ops: []int{byModel[st.Op.Index], byModel[st.Partner.Index]}})
		}
	}
	return out, nil
}

// firstEventLine is the line of the first event of a history laid out by
// layObjects: after the header and a line per object.
func firstEventLine(h *model.History) int { return 2 + len(h.Objects) }

// layObjects checks a history of objects' operations, merges their steps by
// timestamp and builds them as a version 2 history named name (a
// model.History, as the version 2 reader would give), whose lines are
// those of its text (layout.text) though none is written; byModel maps an
// operation of the version 2 history (in order of invocation) to the
// caller's index.
func layObjects(h History, name string) (mh *model.History, lay *layout, byModel []int, err error) {
	ops := h.Operations
	if len(ops) == 0 {
		return nil, nil, nil, &Error{Op: -1, Crash: -1, Err: history.ErrIllFormed,
			Msg: "no operation: an empty history proves nothing (did the recorder record anything?)"}
	}
	if h.Init != 0 || h.InitWords != nil {
		return nil, nil, nil, &Error{Op: -1, Crash: -1, Err: history.ErrSyntax,
			Msg: "a history of objects gives initial values as its objects' parameters (a words object's init=V, A=V), not as Init and InitWords"}
	}
	for i := range ops {
		o := &ops[i]
		switch {
		case o.Kind != 0 || o.Addrs != nil || o.Expected != nil || o.New != nil || o.Values != nil || o.FailAddr != 0:
			return nil, nil, nil, opError(i, history.ErrSyntax, "has the word array's fields (Kind, Addrs, ...) in a history of objects: an object's operation has Object, Name, Args and Results")
		case o.Process < 0 || o.Process > history.MaxProc:
			return nil, nil, nil, opError(i, history.ErrSyntax, "process %d is not in 0 .. %d", o.Process, history.MaxProc)
		case o.Object < 0 || o.Object >= len(h.Objects):
			return nil, nil, nil, opError(i, history.ErrSyntax, "acts on object %d, and History.Objects has %d", o.Object, len(h.Objects))
		case o.Outcome == Returned && len(o.Results) == 0:
			return nil, nil, nil, opError(i, history.ErrIllFormed, "returned no result (an operation that returned has its Results; Unknown: its outcome is not known)")
		case o.Outcome != Returned && o.Outcome != Unknown && o.Outcome != Pending:
			return nil, nil, nil, opError(i, history.ErrIllFormed, "an operation on an object ends Returned, Unknown or Pending, not %v", o.Outcome)
		case o.Outcome != Returned && o.Results != nil:
			return nil, nil, nil, opError(i, history.ErrIllFormed, "has Results but ended %v", o.Outcome)
		case o.Outcome != Pending && o.Return < o.Call:
			return nil, nil, nil, opError(i, history.ErrIllFormed, "returns at %d, before its call at %d", o.Return, o.Call)
		}
	}
	order, err := merged(ops, h.Crashes)
	if err != nil {
		return nil, nil, nil, err
	}
	mh = &model.History{Name: name, Objects: make([]model.Object, len(h.Objects)), Events: len(order)}
	base := int64(firstEventLine(mh))
	for i, o := range h.Objects {
		mh.Objects[i] = o
		mh.Objects[i].Line = int64(2 + i)
	}
	n := len(ops)
	index := make([]int, n) // the caller's index -> mh.Ops's
	pending := map[int]int{}
	for p, s := range order {
		line := base + int64(p)
		switch i := int(s) / 2; {
		case int(s) >= 2*n:
			c := len(mh.Crashes)
			mh.Crashes = append(mh.Crashes, model.Crash{Pos: p, Line: line})
			for proc, k := range pending {
				mh.Ops[k].Crash = c
				delete(pending, proc)
			}
		case s%2 == 0:
			o := &ops[i]
			index[i] = len(mh.Ops)
			pending[o.Process] = len(mh.Ops)
			mh.Ops = append(mh.Ops, model.Op{Proc: int64(o.Process), Object: o.Object, Name: o.Name, Args: o.Args,
				Status: model.CutOff, Call: p, Return: -1, Crash: -1, Line: line})
		default:
			o, op := &ops[i], &mh.Ops[index[i]]
			delete(pending, o.Process)
			op.Return, op.RetLine = p, line
			op.Status, op.Results = model.Returned, o.Results
			if o.Outcome == Unknown {
				op.Status = model.Unknown
			}
		}
	}
	if err := history.WritableV2(mh); err != nil {
		return nil, nil, nil, &Error{Op: -1, Crash: -1, Err: history.ErrSyntax, Msg: err.Error()}
	}
	lay = newLayout(ops, order, base)
	lay.mh = mh
	byModel = make([]int, len(mh.Ops))
	for i, k := range index {
		byModel[k] = i
	}
	return mh, lay, byModel, nil
}
