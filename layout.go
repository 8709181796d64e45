package pmlin

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/merge"
	"github.com/pmlin/pmlin/internal/tie"
	"github.com/pmlin/pmlin/model"
)

// layout is a History merged into one order of steps, with its events as
// the analyzer reads them and what maps the analyzer's lines back to the
// caller's operations and crashes. A line is the one the step has in the
// history's text (History.WriteTo), which is rendered only when asked for:
// the check reads the events.
type layout struct {
	// order is the steps in order (merged): step s is operation s/2's
	// invocation (s even) or response (s odd), or, from 2n on, crash
	// s-2n; order[p] is at line first+p.
	order []int32
	n     int
	first int64
	// returns are the operations' return timestamps, for sentences.
	returns []int64
	invLine []int64
	// rec holds the events of a history of words, mh a history of
	// objects.
	rec *history.Recording
	mh  *model.History
}

// lineOf is what a line of the history holds.
type lineOf struct {
	op, crash int // -1 when not
	ret       bool
}

// at is what line holds: an operation's invocation or response, a crash,
// or nothing (the header).
func (l *layout) at(line int64) (lineOf, bool) {
	p := line - l.first
	if p < 0 || p >= int64(len(l.order)) {
		return lineOf{op: -1, crash: -1}, false
	}
	switch s := int(l.order[p]); {
	case s >= 2*l.n:
		return lineOf{op: -1, crash: s - 2*l.n}, true
	default:
		return lineOf{op: s / 2, crash: -1, ret: s%2 == 1}, true
	}
}

// newLayout is the layout of the steps of ops and crashes in order, the
// first at line first.
func newLayout(ops []Operation, order []int32, first int64) *layout {
	l := &layout{order: order, n: len(ops), first: first, returns: make([]int64, len(ops)), invLine: make([]int64, len(ops))}
	for i := range ops {
		l.returns[i] = ops[i].Return
	}
	for p, s := range order {
		if int(s) < 2*l.n && s%2 == 0 {
			l.invLine[s/2] = first + int64(p)
		}
	}
	return l
}

// lay validates h, merges its steps by timestamp (merge.Order, which
// refuses a tie no order of lines can state honestly) and records them as
// the events the analyzer reads (a history.Recording).
func lay(h History) (*layout, error) {
	ops := h.Operations
	if len(ops) == 0 {
		return nil, &Error{Op: -1, Crash: -1, Err: history.ErrIllFormed,
			Msg: "no operation: an empty history proves nothing (did the recorder record anything?)"}
	}
	for i := range ops {
		if err := validate(i, &ops[i]); err != nil {
			return nil, err
		}
	}
	order, err := merged(ops, h.Crashes)
	if err != nil {
		return nil, err
	}
	rec := &history.Recording{}
	rec.Header(h.Init, h.InitWords)
	n := len(ops)
	for _, s := range order {
		if int(s) >= 2*n {
			rec.Crash()
			continue
		}
		o := &ops[s/2]
		p := int32(o.Process)
		if s%2 == 0 {
			switch o.Kind {
			case Read:
				rec.InvokeRead(p, o.Addrs)
			case CAS:
				rec.InvokeCAS(p, o.Addrs, o.Expected, o.New)
			default:
				rec.InvokeSwap(p, o.Addrs, o.New)
			}
			continue
		}
		switch {
		case o.Outcome == Returned:
			rec.ReturnRead(p, o.Values)
		case o.Outcome == OK:
			rec.ReturnOK(p)
		case o.Values == nil:
			rec.ReturnFail(p, o.FailAddr)
		default:
			rec.ReturnFailValues(p, o.FailAddr, o.Values)
		}
	}
	l := newLayout(ops, order, headerLines(h)+1)
	l.rec = rec
	return l, nil
}

// headerLines counts the lines of h's header in the text.
func headerLines(h History) int64 {
	var b bytes.Buffer
	w := history.NewWriter(&b)
	w.Header(h.Init, h.InitWords)
	w.Flush()
	return int64(bytes.Count(b.Bytes(), []byte{'\n'}))
}

// merged checks the operations' times (one process's operations do not
// overlap; crashes) and merges their steps by timestamp (merge.Order,
// which refuses a tie no order of lines can state honestly): step s of the
// order is operation s/2's invocation (s even) or response (s odd), or,
// from 2n on, crash s-2n. An operation with a response is any but Pending.
func merged(ops []Operation, crashes []int64) ([]int32, error) {
	sorted := slices.Clone(crashes)
	slices.Sort(sorted)
	byProc, err := perProcess(ops, sorted)
	if err != nil {
		return nil, err
	}
	if err := crashTies(ops, crashes); err != nil {
		return nil, err
	}
	n := len(ops)
	steps := make([]merge.Step, 2*n+len(crashes))
	var streams [][]int32
	for k, c := range crashes {
		steps[2*n+k] = merge.Step{TS: key(c), Proc: -1}
		streams = append(streams, []int32{int32(2*n + k)})
	}
	for _, list := range byProc {
		var st []int32
		for _, i := range list {
			o := &ops[i]
			steps[2*i] = merge.Step{TS: key(o.Call), Proc: int32(o.Process)}
			st = append(st, int32(2*i))
			if o.Outcome != Pending {
				steps[2*i+1] = merge.Step{TS: key(o.Return), Proc: int32(o.Process), Ret: true}
				st = append(st, int32(2*i+1))
			}
		}
		streams = append(streams, st)
	}
	order, _, err := merge.Order(steps, streams)
	var te *merge.TieError
	if errors.As(err, &te) {
		// Both steps are responses: operation i's is step 2i+1.
		i, j := int(te.Step)/2, int(te.Other)/2
		return nil, &Error{Op: i, Crash: -1, Err: history.ErrCoarseClock,
			Msg: "its response: " + tie.Message(int32(ops[i].Process), ops[i].Return, int32(ops[j].Process), fmt.Sprintf("operation %d's response", j))}
	}
	return order, err
}

// key maps a signed timestamp to an unsigned one of the same order.
func key(ts int64) uint64 { return uint64(ts) ^ 1<<63 }

// validate checks operation i's shape: what the format's reader would
// refuse, said of the caller's operation.
func validate(i int, o *Operation) error {
	k := len(o.Addrs)
	switch {
	case o.Object != 0 || o.Name != "" || o.Args != nil || o.Results != nil:
		return opError(i, history.ErrSyntax, "has an object's operation (Object, Name, Args, Results) in a history of the word array: a history of objects has History.Objects")
	case o.Process < 0 || o.Process > history.MaxProc:
		return opError(i, history.ErrSyntax, "process %d is not in 0 .. %d", o.Process, history.MaxProc)
	case !kindKnown(o.Kind):
		return opError(i, history.ErrSyntax, "unknown kind of operation %v", o.Kind)
	case k == 0:
		return opError(i, history.ErrIllFormed, "a %v with no address", o.Kind)
	case o.Kind == CAS && (len(o.Expected) != k || len(o.New) != k):
		return opError(i, history.ErrIllFormed, "a cas on %d addresses has %d expected and %d new values", k, len(o.Expected), len(o.New))
	case o.Kind != Read && o.Kind != CAS && (len(o.New) != k || o.Expected != nil):
		return opError(i, history.ErrIllFormed, "a %v on %d addresses has %d new values and no expected ones", o.Kind, k, len(o.New))
	case o.Kind == Read && (o.Expected != nil || o.New != nil):
		return opError(i, history.ErrIllFormed, "a read has no expected or new values")
	case o.Outcome != Pending && o.Return < o.Call:
		return opError(i, history.ErrIllFormed, "returns at %d, before its call at %d", o.Return, o.Call)
	}
	for x := range k {
		if slices.Contains(o.Addrs[:x], o.Addrs[x]) {
			return opError(i, history.ErrIllFormed, "address %d appears twice", o.Addrs[x])
		}
	}
	switch {
	case o.Outcome == Pending:
	case o.Outcome == Returned && o.Kind != CAS && len(o.Values) == k:
	case o.Outcome == Returned && o.Kind != CAS:
		return opError(i, history.ErrIllFormed, "a %v on %d addresses returns %d values", o.Kind, k, len(o.Values))
	case o.Outcome == OK && o.Kind == CAS:
	case o.Outcome == Failed && o.Kind == CAS && !slices.Contains(o.Addrs, o.FailAddr):
		return opError(i, history.ErrIllFormed, "fails at address %d, which is not one of its addresses", o.FailAddr)
	case o.Outcome == Failed && o.Kind == CAS && o.Values != nil && len(o.Values) != k:
		return opError(i, history.ErrIllFormed, "a cas on %d addresses fails reporting %d values (one per address, or nil)", k, len(o.Values))
	case o.Outcome == Failed && o.Kind == CAS:
	default:
		return opError(i, history.ErrIllFormed, "a %v cannot end %v (a read or a swap: Returned or Pending; a cas: OK, Failed or Pending)", o.Kind, o.Outcome)
	}
	return nil
}

// perProcess lists each process's operations in the order of their calls
// and checks that they do not overlap: each is called at or after its
// previous one returned, or after a crash that cut the previous one off.
func perProcess(ops []Operation, crashes []int64) (map[int][]int, error) {
	byProc := map[int][]int{}
	for i := range ops {
		byProc[ops[i].Process] = append(byProc[ops[i].Process], i)
	}
	for p, list := range byProc {
		slices.SortStableFunc(list, func(a, b int) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
		for x := 1; x < len(list); x++ {
			a, b := &ops[list[x-1]], &ops[list[x]]
			if a.Outcome != Pending && a.Return > b.Call {
				return nil, opError(list[x], history.ErrIllFormed, "process %d calls it at %d while its operation %d, called at %d, returns only at %d: one process's operations must not overlap",
					p, b.Call, list[x-1], a.Call, a.Return)
			}
			if a.Outcome == Pending && !crashBetween(crashes, a.Call, b.Call) {
				return nil, opError(list[x], history.ErrIllFormed, "process %d calls it at %d while its operation %d, called at %d, is pending with no crash between: an operation cut off by a crash is Pending, and a pending operation is its process's last before a crash or the end",
					p, b.Call, list[x-1], a.Call)
			}
		}
	}
	for i := range ops {
		if o := &ops[i]; o.Outcome != Pending && crashBetween(crashes, o.Call, o.Return) {
			return nil, opError(i, history.ErrIllFormed, "returns at %d, after a crash that came during it: an operation cut off by a crash has no response (Outcome Pending)", o.Return)
		}
	}
	return byProc, nil
}

// crashBetween reports whether a crash falls strictly between from and
// to (crashes sorted).
func crashBetween(crashes []int64, from, to int64) bool {
	k, _ := slices.BinarySearch(crashes, from+1)
	return from < to && k < len(crashes) && crashes[k] < to
}

// crashTies refuses a crash with the timestamp of a step, or of another
// crash: which side of the crash the step is on would be a guess.
func crashTies(ops []Operation, crashes []int64) error {
	at := map[int64]int{}
	for k, c := range crashes {
		if j, dup := at[c]; dup {
			return &Error{Op: -1, Crash: k, Err: history.ErrIllFormed, Msg: fmt.Sprintf("has the timestamp %d of crash %d", c, j)}
		}
		at[c] = k
	}
	for i := range ops {
		o := &ops[i]
		if k, ok := at[o.Call]; ok {
			return opError(i, history.ErrIllFormed, "is called at %d, the timestamp of crash %d: a crash must come strictly between the steps before and after it", o.Call, k)
		}
		if k, ok := at[o.Return]; ok && o.Outcome != Pending {
			return opError(i, history.ErrIllFormed, "returns at %d, the timestamp of crash %d: a crash must come strictly between the steps before and after it", o.Return, k)
		}
	}
	return nil
}

// text renders the history as the text it is checked as, in format v1
// (words) or version 2 (objects), each invocation line ending with
// "# op I" and each crash line with "# crash K": for the caller who asks
// (History.WriteTo, Result.WriteHistory), never for the check.
func (l *layout) text() ([]byte, error) {
	var b bytes.Buffer
	if l.mh != nil {
		if err := history.WriteV2(&b, l.mh, history.Text); err != nil {
			return nil, &Error{Op: -1, Crash: -1, Err: history.ErrSyntax, Msg: err.Error()}
		}
	} else if _, err := l.rec.WriteTo(&b); err != nil {
		return nil, err
	}
	var text []byte
	for k, line := range bytes.SplitAfter(b.Bytes(), []byte("\n")) {
		at, ok := l.at(int64(k + 1))
		switch {
		case ok && at.op >= 0 && !at.ret:
			line = append(bytes.TrimSuffix(line, []byte("\n")), "  # op "+strconv.Itoa(at.op)+"\n"...)
		case ok && at.crash >= 0:
			line = append(bytes.TrimSuffix(line, []byte("\n")), "  # crash "+strconv.Itoa(at.crash)+"\n"...)
		}
		text = append(text, line...)
	}
	return text, nil
}

// The analyzer's Namer: events by the caller's indexes.

// Op names the operation invoked at line, by its index: "operation 3".
func (l *layout) Op(line int64) string {
	at, ok := l.at(line)
	switch {
	case !ok:
		return "line " + strconv.FormatInt(line, 10)
	case at.crash >= 0:
		return "crash " + strconv.Itoa(at.crash)
	case at.ret:
		return "operation " + strconv.Itoa(at.op) + "'s response"
	}
	return "operation " + strconv.Itoa(at.op)
}

// Returned says when the operation whose response is at line returned:
// at its return timestamp.
func (l *layout) Returned(line int64) string {
	if at, ok := l.at(line); ok && at.op >= 0 {
		return "at time " + strconv.FormatInt(l.returns[at.op], 10)
	}
	return "at line " + strconv.FormatInt(line, 10)
}

// Order: the caller's Call and Return timestamps, with no merge to blame.
func (l *layout) Order() analyzer.Order {
	return analyzer.Order{
		Name:   "the order of the operations' Call and Return timestamps",
		Blocks: "Between crashes, each process's operations form one block of timestamps: they look like per-thread counters, not one clock.",
		Fix:    "Check your clock: Call and Return from one global clock for every thread, each thread's own order kept",
	}
}

// Crashes names crashes by their index in History.Crashes: "crash 1",
// "crashes 0 and 2".
func (l *layout) Crashes(lines ...int64) string {
	ks := l.crashes(lines)
	if len(ks) == 1 {
		return "crash " + ks[0]
	}
	return "crashes " + strings.Join(ks[:len(ks)-1], ", ") + " and " + ks[len(ks)-1]
}

// OpList lists operations by index in a title: "operations 0, 1".
func (l *layout) OpList(lines []int64) string {
	is := make([]string, len(lines))
	for k, line := range lines {
		is[k] = strconv.Itoa(l.op(line))
	}
	return titleList(is, "operation ", "operations ")
}

// CrashList lists crashes by index in a title: "crashes 0, 1".
func (l *layout) CrashList(lines []int64) string {
	return titleList(l.crashes(lines), "crash ", "crashes ")
}

// crashes are the indexes of the crashes at lines.
func (l *layout) crashes(lines []int64) []string {
	ks := make([]string, len(lines))
	for k, line := range lines {
		at, _ := l.at(line)
		ks[k] = strconv.Itoa(at.crash)
	}
	return ks
}

// titleList is a title's list of xs, after one or many.
func titleList(xs []string, one, many string) string {
	if len(xs) == 1 {
		return one + xs[0]
	}
	return many + strings.Join(xs, ", ")
}
