package analyzer

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/pmlin/pmlin/history"
)

// Operation flags.
const (
	fRead      uint8 = 1 << iota // a read (else a cas)
	fReturned                    // it has a response
	fOK                          // a cas that returned ok
	fCrashed                     // cut off by a crash (else, if not returned, by the end)
	fCompleted                   // a pending cas taken to have succeeded
	fNoAux                       // a failed cas that breaks Assumption 2: no auxiliary constraint
)

// Versions (ver[x]) are writer access indexes, or one of these.
const (
	verGenesis    int32 = -1 // the initial value
	verDangling   int32 = -2 // a value nobody wrote at that word
	verUnresolved int32 = -3 // not looked up (pending read, failed cas's other words)
)

// none marks an absent op or access.
const none int32 = -1

// blamed marks, in word[x], the access a failed cas blamed.
const blamed uint32 = 1 << 31

// crashRec is an operation cut off by a crash.
type crashRec struct {
	op   int32
	at   int32 // operations invoked before the crash: the op's strict "response"
	next int32 // its process's next operation, or none
	line uint32
}

// hist is a history loaded into flat arrays. Operations are numbered in
// invocation order (dense ids); accesses are the (operation, word) pairs,
// operation i owning accesses acc[i]..acc[i+1]-1, in the invocation's order.
type hist struct {
	name string
	n    int32

	// per operation
	line    []uint32 // line of the invocation
	retLine []uint32 // line of the response, 0 if none
	proc    []int32  // process index
	flags   []uint8
	acc     []uint32 // len n+1
	lo      []int32  // ops invoked before its response (see package reduce); math.MaxInt32 if none

	// per access
	word  []uint32 // word id, | blamed
	val   []uint64 // value read, or expected by a cas
	nw    []uint64 // new value of a cas
	accOp []int32  // owning operation

	// words
	wordID  map[uint64]int32
	addr    []uint64 // word id -> address
	initVal []uint64 // word id -> initial value

	procIDs []int32 // process index -> process id
	crashed []crashRec
	crashes int64

	pendingCAS []int32 // cas without a response
	failedCAS  []int32 // cas that returned fail
}

func (h *hist) isRead(i int32) bool   { return h.flags[i]&fRead != 0 }
func (h *hist) returned(i int32) bool { return h.flags[i]&fReturned != 0 }

// wordOf is the word id of access x.
func (h *hist) wordOf(x int32) int32 { return int32(h.word[x] &^ blamed) }

// maxLine is the largest line number the compact arrays hold.
const maxLine = math.MaxUint32

// load streams a history into h: the only pass over the input.
func load(ctx context.Context, r *history.Reader, sizeHint int64) (*hist, error) {
	h := &hist{name: r.Name(), wordID: make(map[uint64]int32)}
	if sizeHint > 0 {
		// About 50 bytes of text per operation (two lines); preallocating
		// avoids the copies of append's doubling on large files.
		ops := sizeHint / 50
		if ops > 1<<28 {
			ops = 1 << 28
		}
		h.line = make([]uint32, 0, ops)
		h.retLine = make([]uint32, 0, ops)
		h.proc = make([]int32, 0, ops)
		h.flags = make([]uint8, 0, ops)
		h.acc = make([]uint32, 0, ops+1)
		h.lo = make([]int32, 0, ops)
		h.word = make([]uint32, 0, 2*ops)
		h.val = make([]uint64, 0, 2*ops)
		h.nw = make([]uint64, 0, 2*ops)
		h.accOp = make([]int32, 0, 2*ops)
	}
	var pending []int32     // process index -> pending op, or none
	var lastCrashed []int32 // process index -> index in h.crashed of its last crashed op, or none
	for count := 0; ; count++ {
		if count&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if ev.Line > maxLine {
			return nil, &history.Error{File: h.name, Line: ev.Line, Msg: "histories longer than 4294967295 lines are not supported"}
		}
		switch ev.Kind {
		case history.Invoke:
			if h.n == math.MaxInt32-1 {
				return nil, &history.Error{File: h.name, Line: ev.Line, Msg: "more than 2147483646 operations are not supported"}
			}
			if len(h.word)+len(ev.Addrs) > math.MaxInt32 {
				return nil, &history.Error{File: h.name, Line: ev.Line, Msg: "more than 2147483647 words accessed in all are not supported"}
			}
			for int(ev.ProcIndex) >= len(pending) {
				pending = append(pending, none)
				lastCrashed = append(lastCrashed, none)
				h.procIDs = append(h.procIDs, 0)
			}
			id := h.n
			h.n++
			h.procIDs[ev.ProcIndex] = ev.Proc
			pending[ev.ProcIndex] = id
			if c := lastCrashed[ev.ProcIndex]; c != none {
				h.crashed[c].next = id
				lastCrashed[ev.ProcIndex] = none
			}
			f := uint8(0)
			if ev.Op == history.Read {
				f = fRead
			}
			h.line = append(h.line, uint32(ev.Line))
			h.retLine = append(h.retLine, 0)
			h.proc = append(h.proc, ev.ProcIndex)
			h.flags = append(h.flags, f)
			h.acc = append(h.acc, uint32(len(h.word)))
			h.lo = append(h.lo, math.MaxInt32)
			for j, a := range ev.Addrs {
				w, ok := h.wordID[a]
				if !ok {
					w = int32(len(h.addr))
					h.wordID[a] = w
					h.addr = append(h.addr, a)
					h.initVal = append(h.initVal, r.InitValue(a))
				}
				h.word = append(h.word, uint32(w))
				h.accOp = append(h.accOp, id)
				if ev.Op == history.CAS {
					h.val = append(h.val, ev.Expected[j])
					h.nw = append(h.nw, ev.New[j])
				} else {
					h.val = append(h.val, 0)
					h.nw = append(h.nw, 0)
				}
			}
		case history.Return:
			id := pending[ev.ProcIndex]
			pending[ev.ProcIndex] = none
			h.lo[id] = h.n
			h.retLine[id] = uint32(ev.Line)
			h.flags[id] |= fReturned
			a := h.acc[id]
			switch {
			case ev.Op == history.Read:
				copy(h.val[a:], ev.Values)
			case ev.OK:
				h.flags[id] |= fOK
			default:
				for x := a; ; x++ {
					if h.addr[h.word[x]] == ev.FailAddr {
						h.word[x] |= blamed
						break
					}
				}
			}
		case history.Crash:
			h.crashes++
			for p, id := range pending {
				if id == none {
					continue
				}
				h.flags[id] |= fCrashed
				lastCrashed[p] = int32(len(h.crashed))
				h.crashed = append(h.crashed, crashRec{op: id, at: h.n, next: none, line: uint32(ev.Line)})
				pending[p] = none
			}
		}
	}
	h.acc = append(h.acc, uint32(len(h.word)))
	for i := range h.lo {
		if h.lo[i] > h.n {
			h.lo[i] = h.n
		}
	}
	for i := int32(0); i < h.n; i++ {
		switch f := h.flags[i]; {
		case f&fRead != 0:
		case f&fReturned == 0:
			h.pendingCAS = append(h.pendingCAS, i)
		case f&fOK == 0:
			h.failedCAS = append(h.failedCAS, i)
		}
	}
	return h, nil
}

// blamedAccess is the access failed cas i blamed.
func (h *hist) blamedAccess(i int32) int32 {
	for x := int32(h.acc[i]); ; x++ {
		if h.word[x]&blamed != 0 {
			return x
		}
	}
}

// opName describes an operation for explanations.
func (h *hist) opName(i int32) string {
	kind := "cas"
	if h.isRead(i) {
		kind = "read"
	}
	return fmt.Sprintf("line %d (process %d %s)", h.line[i], h.procIDs[h.proc[i]], kind)
}
