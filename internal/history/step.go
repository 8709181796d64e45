package history

import "github.com/pmlin/pmlin/internal/wire"

// Step is an event as NextStep hands it over: an Event whose invocation
// words may be strided views (the j-th address is Addrs[j*Stride], a
// cas's j-th expected value Expected[j*Stride], a cas's or a swap's j-th
// new value New[j*Stride]; K is the number of addresses). A Recording's
// are views of the recording's own words, which keep a cas's or a swap's
// interleaved: no copies. pmlin fuzz checks a Recording per run: filling
// an Event (its words split and copied, the process's copies swapped)
// took about 300 instructions an event, a quarter of the check of a run's
// history. Any other input's are the Event Next decodes, in place, with
// Stride 1: the analyzer's loader reads every input as Steps, and a copy
// of each Event into a Step cost pmlin check 4 % of its instructions.
//
// A Step, its slices included, is valid until the next call of NextStep;
// its slices must not be modified.
type Step struct {
	Event
	Stride, K int
}

// setWords sets st's words to those of an invocation of op that a
// Recording keeps in inv (k addresses), on a Return (ret) without the new
// values, as an Event's. (Each field written once: NextStep calls it for
// every event.)
func (st *Step) setWords(op OpKind, inv []uint64, k int, ret bool) {
	st.Addrs, st.Stride, st.K = inv, stride(op), k
	switch {
	case op == CAS && ret:
		st.Expected, st.New = inv[1:], nil
	case op == CAS:
		st.Expected, st.New = inv[1:], inv[2:]
	case op == Swap && !ret:
		st.Expected, st.New = nil, inv[1:]
	default:
		st.Expected, st.New = nil, nil
	}
}

// stepsOnly reports whether NextStep reads r as a Recording's steps: r is a
// Reader of a Recording (Recording.Reader) without text lines (TextLine).
// Read a Reader with NextStep alone or with Next alone.
func (r *Reader) stepsOnly() bool { return r.steps }

// NextStep is Next with each event as a Step: the same events, lines,
// checks and errors. A Reader that Steps hands over the recording's words
// as strided views; any other hands over the Event Next decoded, in place,
// with Stride 1.
func (r *Reader) NextStep() (*Step, error) {
	if !r.stepsOnly() {
		return r.nextAsStep()
	}
	rc := r.rec
	for r.err == nil && r.recPos < len(rc.words) {
		// nextRecord, written out: with the record's decoding (at) it is
		// too large to inline, and this is every event.
		kind, n, p, next := rc.at(r.recPos)
		pay := rc.words[r.recPos+1 : next : next] // the Step's views: an append must not reach the next record
		r.recPos = next
		r.line++
		var st *Step
		var err error
		switch {
		case p >= 0 && wire.IsInvocation(kind):
			st, err = r.stepInvoke(kind, p, n, pay)
		case p >= 0 && isEvent(kind):
			st, err = r.stepReturn(kind, p, n, pay)
		default:
			// A crash, a text line, or a malformed record: the general
			// path (nil, for no event).
			st, err = r.stepSlow(kind, p, n, pay)
		}
		if err != nil {
			return nil, err
		}
		if st != nil {
			if r.closed != 0 {
				return nil, r.afterClosing()
			}
			r.events++
			return st, nil
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	_, err := r.end()
	return nil, err
}

// stride is the number of a Recording's words per address of an
// invocation of op.
func stride(op OpKind) int { return int(strides[op&3]) }

// The tables of stride and of the operation a record invokes, as
// variables: a table written as a literal in a function is built on every
// call.
var (
	strides   = [4]uint8{Read: 1, CAS: 3, Swap: 2}
	recordOps = [16]OpKind{wire.RecInvRead: Read, wire.RecInvCAS: CAS, wire.RecInvSwap: Swap}
)

// stepInvoke is NextStep of an invocation record. What invoke would
// reject goes to the general path, which says what is wrong.
func (r *Reader) stepInvoke(kind int, p int32, n int, pay []uint64) (*Step, error) {
	op := recordOps[kind&15]
	str := stride(op)
	if n == 0 || n > r.opts.MaxWords {
		return r.stepSlow(kind, p, n, pay)
	}
	// (Two addresses, the most common count, are one pair: compared
	// here, without a call.)
	if n > 2 || n == 2 && pay[0] == pay[str] {
		if _, dup := duplicateWord(pay, str, n); dup {
			return r.stepSlow(kind, p, n, pay)
		}
	}
	// proc, its known small id's case written out: proc is too large to
	// inline, and this is every invocation.
	idx, ps := r.smallIndex(p), (*procState)(nil)
	if idx >= 0 {
		ps = &r.procs[idx]
	} else {
		idx, ps = r.newProc(p)
	}
	if ps.pending {
		return r.stepSlow(kind, p, n, pay)
	}
	r.started = true
	ps.pending, ps.op, ps.opID, ps.invLine, ps.inv, ps.invK = true, op, r.ops, r.line, pay, n
	r.pending++
	// Field by field: a composite literal cleared and copied the whole
	// Step.
	st := &r.step
	st.Kind, st.Line, st.Proc, st.ProcIndex, st.Op, st.OpID, st.InvLine = Invoke, r.line, p, idx, op, r.ops, r.line
	st.setWords(op, pay, n, false)
	st.Values, st.OK, st.FailAddr, st.Interrupted = nil, false, 0, nil
	r.ops++
	return st, nil
}

// stepReturn is NextStep of a response record. What respond would reject
// goes to the general path, which says what is wrong.
func (r *Reader) stepReturn(kind int, p int32, n int, pay []uint64) (*Step, error) {
	idx, known := r.lookupProc(p)
	if !known {
		return r.stepSlow(kind, p, n, pay)
	}
	ps := &r.procs[idx]
	if !ps.pending || (ps.op == CAS) != (kind != wire.RecRetValues) {
		return r.stepSlow(kind, p, n, pay)
	}
	str, k := stride(ps.op), ps.invK
	var values []uint64
	ok, failAddr := false, uint64(0)
	switch kind {
	case wire.RecRetValues:
		values, ok = pay, ps.op == Swap
		if len(values) != k {
			return r.stepSlow(kind, p, n, pay)
		}
	case wire.RecRetOK:
		ok = true
	default:
		values, failAddr = pay[1:], pay[0]
		if !containsWord(ps.inv, str, failAddr) || (len(values) != 0 && len(values) != k) {
			return r.stepSlow(kind, p, n, pay)
		}
	}
	r.started = true
	st := &r.step
	st.Kind, st.Line, st.Proc, st.ProcIndex, st.Op, st.OpID, st.InvLine = Return, r.line, ps.id, idx, ps.op, ps.opID, ps.invLine
	st.setWords(ps.op, ps.inv, k, true)
	st.Values, st.OK, st.FailAddr, st.Interrupted = values, ok, failAddr, nil
	ps.pending = false
	r.pending--
	return st, nil
}

// stepSlow takes a record by the general path (recordedEvent), with the
// pending operation of process p as that path keeps it, and gives its
// event, if any, as a Step: a crash or a text line, and the rare
// record that is wrong (then the error is the text's).
func (r *Reader) stepSlow(kind int, p int32, n int, pay []uint64) (*Step, error) {
	if idx, known := r.lookupProc(p); known && p >= 0 && isEvent(kind) {
		if ps := &r.procs[idx]; ps.pending {
			str := stride(ps.op)
			ps.addrs = ps.addrs[:0]
			ps.expected = ps.expected[:0]
			for j := 0; j < len(ps.inv); j += str {
				ps.addrs = append(ps.addrs, ps.inv[j])
				if ps.op == CAS {
					ps.expected = append(ps.expected, ps.inv[j+1])
				}
			}
		}
	}
	ev, err := r.recordedEvent(kind, p, n, pay)
	if err != nil || ev == nil {
		return nil, err
	}
	st := &r.step
	*st = Step{Event: *ev} // an invocation's or a response's words set below
	switch ev.Kind {
	case Invoke:
		ps := &r.procs[ev.ProcIndex]
		ps.inv, ps.invK = pay, len(ev.Addrs)
		st.setWords(ev.Op, pay, ps.invK, false)
	case Return:
		ps := &r.procs[ev.ProcIndex]
		st.setWords(ev.Op, ps.inv, ps.invK, true)
	}
	return st, nil
}

// nextAsStep is NextStep of a Reader that does not Step: every path of
// Next decodes its event into r.cur's Event (TestStepsOfEveryFormat), so
// the Step is r.cur with its stride and count set.
func (r *Reader) nextAsStep() (*Step, error) {
	ev, err := r.Next()
	if err != nil {
		return nil, err
	}
	r.cur.Stride, r.cur.K = 1, len(ev.Addrs)
	return &r.cur, nil
}
