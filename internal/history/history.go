package history

import (
	"context"
	"io"
	"maps"
	"slices"
)

// Status is how an operation ended.
type Status uint8

const (
	// Pending: the operation has no response, because a crash interrupted
	// it or the history ended first.
	Pending Status = iota
	// Returned: a read returned its values, or a swap the values it
	// replaced (a swap always takes effect).
	Returned
	// Succeeded: a CAS returned ok.
	Succeeded
	// Failed: a CAS returned fail at FailAddr (and, if it reported them,
	// the values it read in Values).
	Failed
)

func (s Status) String() string {
	return [...]string{"pending", "returned", "ok", "fail"}[s]
}

// Op is one operation of an in-memory History.
type Op struct {
	// ID is the operation's index in History.Ops (invocation order).
	ID int
	// Line is the line of its invocation: its identity in every report.
	Line    int64
	RetLine int64 // 0 while pending
	Proc    int32
	Kind    OpKind
	Addrs   []uint64
	// Expected: a CAS's expected values; New: a CAS's or a swap's new
	// values; both parallel to Addrs.
	Expected, New []uint64
	// Values, parallel to Addrs: a read's returned values, a swap's
	// replaced values, or the values a failed CAS reports (nil if it
	// reports none).
	Values   []uint64
	Status   Status
	FailAddr uint64
	// Inv and Ret are positions in the history's event order (0-based);
	// Ret is -1 for a pending operation. A precedes B in real time iff
	// A.Ret >= 0 && A.Ret < B.Inv.
	Inv, Ret int
	// Crash is the index in History.Crashes of the crash that interrupted
	// the operation, or -1 (completed, or pending at the end).
	Crash int
}

// History is a whole history in memory, for small inputs: tests, the exact
// checker, shrinking. The analyzer streams instead.
type History struct {
	InitDefault uint64
	Init        map[uint64]uint64
	Ops         []Op
	// Crashes are the event positions of the crash lines.
	Crashes []int
	// Events is the number of events (invocations, responses, crashes).
	Events int
}

// InitValue is the initial value of word a.
func (h *History) InitValue(a uint64) uint64 {
	if v, ok := h.Init[a]; ok {
		return v
	}
	return h.InitDefault
}

// ReadAll reads a whole history into memory. For a recording cut short
// (Reader.Cut) it returns the history before the cut and the error that
// says so, an *Error of kind ErrCutShort.
func ReadAll(in io.Reader, name string) (*History, error) {
	return ReadEvents(NewReader(in, name, Options{Prefix: true}))
}

// ReadEvents is ReadAll of the events r reads (a file's, a Recording's).
func ReadEvents(r *Reader) (*History, error) {
	h, _, err := collect(context.Background(), r, nil, func(int64) bool { return true })
	if err == nil {
		err = r.Cut()
	}
	return h, err
}

// Source opens a history's events from the first, again at each call:
// what reads a history a second time (the recorder hints, the exact
// search, the reports) reads it so, from a file or from a Recording
// alike. done releases what the Reader reads from.
type Source func() (r *Reader, done func() error, err error)

// TextSource is the Source of the text open opens again from its start
// (a file), read with opts and named name.
func TextSource(open func() (io.ReadCloser, error), name string, opts Options) Source {
	return func() (*Reader, func() error, error) {
		f, err := open()
		if err != nil {
			return nil, nil, err
		}
		return NewReader(f, name, opts), f.Close, nil
	}
}

// Extract streams a history and keeps the operations invoked at the given
// lines, with their full data, as an in-memory History whose Ops keep
// their original Line and RetLine: the analyzer keeps no values, so
// explanations, reports and shrinking re-read the few lines they show.
//
// Crash lines are kept when keepCrash says so (it may be nil) and always
// when they cut off a kept operation, so the result is well formed:
// written out (WriteTo), it is a valid history whose every kept operation
// ends as it did. The initial values are the input's. crashLines are the
// lines of the kept crashes, parallel to h.Crashes.
func Extract(ctx context.Context, r *Reader, invLines []int64, keepCrash func(line int64) bool) (h *History, crashLines []int64, err error) {
	lines := slices.Clone(invLines)
	slices.Sort(lines)
	lines = slices.Compact(lines)
	k := 0
	keepOp := func(line int64) bool {
		for k < len(lines) && lines[k] < line {
			k++
		}
		return k < len(lines) && lines[k] == line
	}
	if keepCrash == nil {
		keepCrash = func(int64) bool { return false }
	}
	return collect(ctx, r, keepOp, keepCrash)
}

// collect reads r into a History of the operations keepOp accepts (by
// invocation line, asked in increasing order; nil keeps every one) and
// the crashes keepCrash accepts or that cut off a kept operation. Event
// positions count the kept events only.
func collect(ctx context.Context, r *Reader, keepOp, keepCrash func(line int64) bool) (*History, []int64, error) {
	h := &History{}
	var crashLines []int64
	var index map[int64]int // operation id -> index in h.Ops, when filtering
	if keepOp != nil {
		index = map[int64]int{}
	}
	indexOf := func(id int64) (int, bool) {
		if index == nil {
			return int(id), true
		}
		i, ok := index[id]
		return i, ok
	}
	for count := 0; ; count++ {
		if count&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		switch ev.Kind {
		case Invoke:
			if keepOp != nil {
				if !keepOp(ev.Line) {
					continue
				}
				index[ev.OpID] = len(h.Ops)
			}
			op := Op{ID: len(h.Ops), Line: ev.Line, Proc: ev.Proc, Kind: ev.Op,
				Addrs: slices.Clone(ev.Addrs), Inv: h.Events, Ret: -1, Crash: -1}
			switch ev.Op {
			case CAS:
				op.Expected, op.New = slices.Clone(ev.Expected), slices.Clone(ev.New)
			case Swap:
				op.New = slices.Clone(ev.New)
			}
			h.Ops = append(h.Ops, op)
		case Return:
			i, ok := indexOf(ev.OpID)
			if !ok {
				continue
			}
			op := &h.Ops[i]
			op.Ret, op.RetLine = h.Events, ev.Line
			switch {
			case ev.Op != CAS:
				op.Status, op.Values = Returned, slices.Clone(ev.Values)
			case ev.OK:
				op.Status = Succeeded
			default:
				op.Status, op.FailAddr = Failed, ev.FailAddr
				if len(ev.Values) > 0 {
					op.Values = slices.Clone(ev.Values)
				}
			}
		case Crash:
			keep := keepCrash(ev.Line)
			for _, id := range ev.Interrupted {
				if i, ok := indexOf(id); ok {
					h.Ops[i].Crash = len(h.Crashes)
					keep = true
				}
			}
			if !keep {
				continue
			}
			h.Crashes = append(h.Crashes, h.Events)
			crashLines = append(crashLines, ev.Line)
		}
		h.Events++
	}
	h.InitDefault = r.InitDefault()
	if len(r.InitWords()) > 0 {
		h.Init = maps.Clone(r.InitWords())
	}
	return h, crashLines, nil
}

// Lines renders the operation's invocation and response as lines of the
// text format, without line numbers; ret is "" while it is pending.
func (op *Op) Lines() (inv, ret string) {
	inv = string(op.appendInvoke(nil))
	if b := op.appendReturn(nil); b != nil {
		ret = string(b)
	}
	return inv, ret
}

func (op *Op) appendInvoke(b []byte) []byte {
	switch op.Kind {
	case Read:
		return appendInvokeRead(b, op.Proc, op.Addrs)
	case Swap:
		return appendInvokeSwap(b, op.Proc, op.Addrs, op.New)
	}
	return appendInvokeCAS(b, op.Proc, op.Addrs, op.Expected, op.New)
}

// appendReturn appends the response line, nothing while pending.
func (op *Op) appendReturn(b []byte) []byte {
	switch op.Status {
	case Returned:
		return appendReturnRead(b, op.Proc, op.Values)
	case Succeeded:
		return appendProc(b, op.Proc, " ret ok")
	case Failed:
		return appendReturnFail(b, op.Proc, op.FailAddr, op.Values)
	}
	return b
}

// WriteTo writes h in text format v1. Line numbers in the output may differ
// from the file h was read from (comments and blank lines are not kept).
func (h *History) WriteTo(out io.Writer) (int64, error) {
	w := NewWriter(out)
	w.Header(h.InitDefault, h.Init)
	type step struct {
		pos   int
		op    int // -1 for a crash
		isRet bool
	}
	steps := make([]step, 0, 2*len(h.Ops)+len(h.Crashes))
	for i := range h.Ops {
		steps = append(steps, step{h.Ops[i].Inv, i, false})
		if h.Ops[i].Ret >= 0 {
			steps = append(steps, step{h.Ops[i].Ret, i, true})
		}
	}
	for _, c := range h.Crashes {
		steps = append(steps, step{c, -1, false})
	}
	slices.SortFunc(steps, func(a, b step) int { return a.pos - b.pos })
	for _, s := range steps {
		switch {
		case s.op < 0:
			w.Crash()
		case !s.isRet:
			w.buf = h.Ops[s.op].appendInvoke(w.buf)
			w.emit()
		default:
			if w.buf = h.Ops[s.op].appendReturn(w.buf); len(w.buf) > 0 {
				w.emit()
			}
		}
	}
	err := w.Flush()
	return w.Written(), err
}
