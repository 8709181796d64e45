package analyzer

import (
	"fmt"
)

// writerTable maps (word, value) to the access of the cas that wrote that
// value to that word. It is an open-addressing hash table of access
// indexes: the key lives in the access arrays, so a slot is 4 bytes instead
// of the 40-odd a Go map entry with a struct key costs; it is built once,
// at its final size, and probed once per access.
type writerTable struct {
	slots []uint32 // access index + 1; 0 is empty
	mask  uint32
}

func mix(word uint32, v uint64) uint32 {
	x := v ^ uint64(word)*0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return uint32(x)
}

func newWriterTable(entries int) *writerTable {
	size := 16
	for size < 2*entries {
		size <<= 1
	}
	return &writerTable{slots: make([]uint32, size), mask: uint32(size - 1)}
}

// insert adds access x as the writer of (word, value); it returns the
// access already there, or none.
func (t *writerTable) insert(h *hist, x int32) int32 {
	w, v := h.word[x]&^blamed, h.nw[x]
	for i := mix(w, v) & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			t.slots[i] = uint32(x) + 1
			return none
		}
		y := int32(s - 1)
		if h.word[y]&^blamed == w && h.nw[y] == v {
			return y
		}
	}
}

// lookup returns the writer access of (word, value), or none.
func (t *writerTable) lookup(h *hist, w uint32, v uint64) int32 {
	for i := mix(w, v) & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			return none
		}
		y := int32(s - 1)
		if h.word[y]&^blamed == w && h.nw[y] == v {
			return y
		}
	}
}

// writes reports whether op i's new values may have been written: a cas
// that succeeded or is still pending (a failed cas writes nothing).
func (h *hist) writes(i int32) bool {
	f := h.flags[i]
	return f&fRead == 0 && (f&fOK != 0 || f&fReturned == 0)
}

// resolved is the outcome of resolving every access to its version.
type resolved struct {
	ver []int32 // per access: the writer access of the value it read or expected
	// dangling accesses, found once: (access) of completed reads and of
	// cas that wrote or may have written
	dangling []int32
}

// resolve finds the writer of every value read or expected (reads-from,
// Section 4 of the OPODIS paper) and checks Assumption 1 (no value written
// twice to a word, none equal to the word's initial value). It also marks
// failed cas that break Assumption 2 at their blamed word with fNoAux.
func (h *hist) resolve() (*resolved, error) {
	writers := 0
	for i := int32(0); i < h.n; i++ {
		if h.writes(i) {
			writers += int(h.acc[i+1] - h.acc[i])
		}
	}
	t := newWriterTable(writers)
	for i := int32(0); i < h.n; i++ {
		if !h.writes(i) {
			continue
		}
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			w := h.wordOf(x)
			if h.nw[x] == h.initVal[w] {
				return nil, &AssumptionError{File: h.name, Line: int64(h.line[i]), Assumption: 1,
					Msg: fmt.Sprintf("it writes %#x, the initial value of address %d", h.nw[x], h.addr[w])}
			}
			if y := t.insert(h, x); y != none {
				return nil, &AssumptionError{File: h.name, Line: int64(h.line[i]), Assumption: 1,
					Msg: fmt.Sprintf("it writes %#x to address %d, as does the cas of line %d", h.nw[x], h.addr[w], h.line[h.accOp[y]])}
			}
		}
	}
	res := &resolved{ver: make([]int32, len(h.word))}
	ver := res.ver
	// minObs[x], for a writer access x: the smallest lo (see package
	// reduce) of a completed operation that read or expected-and-succeeded
	// on its value: the first moment the value was known to be there.
	// Assumption 2 asks that a failed cas's expected value be known before
	// the cas is invoked.
	minObs := make([]int32, len(h.word))
	for i := range minObs {
		minObs[i] = h.n
	}
	for i := int32(0); i < h.n; i++ {
		f := h.flags[i]
		read, ret, ok := f&fRead != 0, f&fReturned != 0, f&fOK != 0
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			ver[x] = verUnresolved
			// Only a completed read, a cas that wrote or may have, and a
			// failed cas's blamed word are looked up: the other words of a
			// failed cas say nothing (gray box: it names one differing word).
			if (read && !ret) || (!read && ret && !ok && h.word[x]&blamed == 0) {
				continue
			}
			w := h.wordOf(x)
			v := h.val[x]
			switch y := t.lookup(h, uint32(w), v); {
			case y != none:
				ver[x] = y
				if ret && (read || ok) && h.lo[i] < minObs[y] {
					minObs[y] = h.lo[i]
				}
			case v == h.initVal[w]:
				ver[x] = verGenesis
			default:
				ver[x] = verDangling
				if !ret || read || ok {
					res.dangling = append(res.dangling, x)
				}
			}
		}
	}
	// Assumption 2, where the method needs it: at a failed cas's blamed
	// word (for a read and a successful cas, the reads-from edge orders the
	// operation after the writer; for a failed cas nothing else does).
	for i := int32(0); i < h.n; i++ {
		f := h.flags[i]
		if f&(fRead|fOK) != 0 || f&fReturned == 0 {
			continue
		}
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			if h.word[x]&blamed == 0 {
				continue
			}
			// The initial value needs no read: nothing precedes genesis.
			// A dangling expected value is explained by no ordering.
			if y := ver[x]; y >= 0 && minObs[y] > i {
				h.flags[i] |= fNoAux
			}
		}
	}
	return res, nil
}
