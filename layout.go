package pmlin

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/merge"
	"github.com/pmlin/pmlin/internal/tie"
)

// layout is a History as the text the analyzer reads, with what maps the
// text's lines back to the caller's operations and crashes.
type layout struct {
	text    []byte
	invLine []int64
	byLine  map[int64]lineOf
}

// lineOf is what a line of the text holds.
type lineOf struct {
	op, crash int // -1 when not
	ret       bool
}

// lay validates h, merges its steps by timestamp (merge.Order, which
// refuses a tie no order of lines can state honestly) and renders them.
func lay(h History) (*layout, error) {
	ops := h.Operations
	if len(ops) == 0 {
		return nil, &Error{Op: -1, Crash: -1, Err: history.ErrIllFormed,
			Msg: "no operation: an empty history proves nothing (did the recorder record anything?)"}
	}
	hops := make([]history.Op, len(ops))
	for i := range ops {
		op, err := convert(i, &ops[i])
		if err != nil {
			return nil, err
		}
		hops[i] = op
	}
	order, err := merged(ops, h.Crashes)
	if err != nil {
		return nil, err
	}
	return render(h, hops, order)
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

// convert checks operation i's shape and makes it a history.Op.
func convert(i int, o *Operation) (history.Op, error) {
	k := len(o.Addrs)
	switch {
	case o.Object != 0 || o.Name != "" || o.Args != nil || o.Results != nil:
		return history.Op{}, opError(i, history.ErrSyntax, "has an object's operation (Object, Name, Args, Results) in a history of the word array: a history of objects has History.Objects")
	case o.Process < 0 || o.Process > history.MaxProc:
		return history.Op{}, opError(i, history.ErrSyntax, "process %d is not in 0 .. %d", o.Process, history.MaxProc)
	case !kindKnown(o.Kind):
		return history.Op{}, opError(i, history.ErrSyntax, "unknown kind of operation %v", o.Kind)
	case k == 0:
		return history.Op{}, opError(i, history.ErrIllFormed, "a %v with no address", o.Kind)
	case o.Kind == CAS && (len(o.Expected) != k || len(o.New) != k):
		return history.Op{}, opError(i, history.ErrIllFormed, "a cas on %d addresses has %d expected and %d new values", k, len(o.Expected), len(o.New))
	case o.Kind != Read && o.Kind != CAS && (len(o.New) != k || o.Expected != nil):
		return history.Op{}, opError(i, history.ErrIllFormed, "a %v on %d addresses has %d new values and no expected ones", o.Kind, k, len(o.New))
	case o.Kind == Read && (o.Expected != nil || o.New != nil):
		return history.Op{}, opError(i, history.ErrIllFormed, "a read has no expected or new values")
	case o.Outcome != Pending && o.Return < o.Call:
		return history.Op{}, opError(i, history.ErrIllFormed, "returns at %d, before its call at %d", o.Return, o.Call)
	}
	for x := range k {
		if slices.Contains(o.Addrs[:x], o.Addrs[x]) {
			return history.Op{}, opError(i, history.ErrIllFormed, "address %d appears twice", o.Addrs[x])
		}
	}
	hop := history.Op{Proc: int32(o.Process), Kind: o.Kind, Addrs: o.Addrs, Expected: o.Expected, New: o.New, Values: o.Values, FailAddr: o.FailAddr}
	switch {
	case o.Outcome == Pending:
		hop.Status = history.Pending
	case o.Outcome == Returned && o.Kind != CAS && len(o.Values) == k:
		hop.Status = history.Returned
	case o.Outcome == Returned && o.Kind != CAS:
		return history.Op{}, opError(i, history.ErrIllFormed, "a %v on %d addresses returns %d values", o.Kind, k, len(o.Values))
	case o.Outcome == OK && o.Kind == CAS:
		hop.Status = history.Succeeded
	case o.Outcome == Failed && o.Kind == CAS && !slices.Contains(o.Addrs, o.FailAddr):
		return history.Op{}, opError(i, history.ErrIllFormed, "fails at address %d, which is not one of its addresses", o.FailAddr)
	case o.Outcome == Failed && o.Kind == CAS && o.Values != nil && len(o.Values) != k:
		return history.Op{}, opError(i, history.ErrIllFormed, "a cas on %d addresses fails reporting %d values (one per address, or nil)", k, len(o.Values))
	case o.Outcome == Failed && o.Kind == CAS:
		hop.Status = history.Failed
	default:
		return history.Op{}, opError(i, history.ErrIllFormed, "a %v cannot end %v (a read or a swap: Returned or Pending; a cas: OK, Failed or Pending)", o.Kind, o.Outcome)
	}
	return hop, nil
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

// render writes the steps in order as text format v1.
func render(h History, hops []history.Op, order []int32) (*layout, error) {
	var b bytes.Buffer
	w := history.NewWriter(&b)
	w.Header(h.Init, h.InitWords)
	if err := w.Flush(); err != nil {
		return nil, err
	}
	n := len(hops)
	lay := &layout{invLine: make([]int64, n), byLine: make(map[int64]lineOf, 2*n+len(h.Crashes))}
	line := int64(bytes.Count(b.Bytes(), []byte{'\n'}))
	for _, s := range order {
		line++
		switch i := int(s) / 2; {
		case int(s) >= 2*n:
			k := int(s) - 2*n
			fmt.Fprintf(&b, "crash  # crash %d\n", k)
			lay.byLine[line] = lineOf{op: -1, crash: k}
		case s%2 == 0:
			inv, _ := hops[i].Lines()
			b.WriteString(inv + "  # op " + strconv.Itoa(i) + "\n")
			lay.invLine[i] = line
			lay.byLine[line] = lineOf{op: i, crash: -1}
		default:
			_, ret := hops[i].Lines()
			b.WriteString(ret + "\n")
			lay.byLine[line] = lineOf{op: i, crash: -1, ret: true}
		}
	}
	lay.text = b.Bytes()
	return lay, nil
}
