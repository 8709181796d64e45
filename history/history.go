package history

import (
	"io"
	"slices"
)

// Status is how an operation ended.
type Status uint8

const (
	// Pending: the operation has no response, because a crash interrupted
	// it or the history ended first.
	Pending Status = iota
	// Returned: a read returned its values.
	Returned
	// Succeeded: a CAS returned ok.
	Succeeded
	// Failed: a CAS returned fail at FailAddr.
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
	// Expected and New: a CAS's values, parallel to Addrs.
	Expected, New []uint64
	// Values: a read's returned values, parallel to Addrs.
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

// ReadAll reads a whole history into memory.
func ReadAll(in io.Reader, name string) (*History, error) {
	r := NewReader(in, name, Options{})
	h := &History{}
	pending := map[int32]int{} // process index -> op ID
	for pos := 0; ; pos++ {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch ev.Kind {
		case Invoke:
			op := Op{ID: len(h.Ops), Line: ev.Line, Proc: ev.Proc, Kind: ev.Op,
				Addrs: slices.Clone(ev.Addrs), Inv: pos, Ret: -1, Crash: -1}
			if ev.Op == CAS {
				op.Expected, op.New = slices.Clone(ev.Expected), slices.Clone(ev.New)
			}
			pending[ev.ProcIndex] = op.ID
			h.Ops = append(h.Ops, op)
		case Return:
			op := &h.Ops[pending[ev.ProcIndex]]
			delete(pending, ev.ProcIndex)
			op.Ret, op.RetLine = pos, ev.Line
			switch {
			case ev.Op == Read:
				op.Status, op.Values = Returned, slices.Clone(ev.Values)
			case ev.OK:
				op.Status = Succeeded
			default:
				op.Status, op.FailAddr = Failed, ev.FailAddr
			}
		case Crash:
			for _, id := range pending {
				h.Ops[id].Crash = len(h.Crashes)
			}
			clear(pending)
			h.Crashes = append(h.Crashes, pos)
		}
		h.Events = pos + 1
	}
	h.InitDefault = r.InitDefault()
	if len(r.InitWords()) > 0 {
		h.Init = make(map[uint64]uint64, len(r.InitWords()))
		for a, v := range r.InitWords() {
			h.Init[a] = v
		}
	}
	return h, nil
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
			op := &h.Ops[s.op]
			if op.Kind == Read {
				w.InvokeRead(op.Proc, op.Addrs)
			} else {
				w.InvokeCAS(op.Proc, op.Addrs, op.Expected, op.New)
			}
		default:
			op := &h.Ops[s.op]
			switch op.Status {
			case Returned:
				w.ReturnRead(op.Proc, op.Values)
			case Succeeded:
				w.ReturnOK(op.Proc)
			case Failed:
				w.ReturnFail(op.Proc, op.FailAddr)
			}
		}
	}
	err := w.Flush()
	return w.Written(), err
}
