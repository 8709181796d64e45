package analyzer

import (
	"fmt"
)

// writerTable maps (word, value) to the access of the cas that wrote that
// value to that word. It is an open-addressing hash table of access
// indexes: the key lives in the access arrays, so a slot is 4 bytes instead
// of the 40-odd a Go map entry with a struct key costs, and no allocation
// happens per entry. Written by hand because it is the analyzer's hottest
// lookup (one per word read or expected).
type writerTable struct {
	slots []uint32 // access index + 1; 0 is empty
	mask  uint32
	count int
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

// insert adds access x as the writer of (word, new value); it returns the
// access already there for that key, or none.
func (t *writerTable) insert(h *hist, x int32) int32 {
	if 2*(t.count+1) > len(t.slots) {
		t.grow(h)
	}
	w, v := h.word[x]&^blamed, h.nw[x]
	for i := mix(w, v) & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			t.slots[i] = uint32(x) + 1
			t.count++
			return none
		}
		y := int32(s - 1)
		if h.word[y]&^blamed == w && h.nw[y] == v {
			return y
		}
	}
}

// replace makes x the writer of its key, which must be present.
func (t *writerTable) replace(h *hist, x int32) {
	w, v := h.word[x]&^blamed, h.nw[x]
	for i := mix(w, v) & t.mask; ; i = (i + 1) & t.mask {
		y := int32(t.slots[i] - 1)
		if h.word[y]&^blamed == w && h.nw[y] == v {
			t.slots[i] = uint32(x) + 1
			return
		}
	}
}

func (t *writerTable) grow(h *hist) {
	old := t.slots
	t.slots = make([]uint32, 2*len(old))
	t.mask = uint32(len(t.slots) - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		y := int32(s - 1)
		for i := mix(h.word[y]&^blamed, h.nw[y]) & t.mask; ; i = (i + 1) & t.mask {
			if t.slots[i] == 0 {
				t.slots[i] = s
				break
			}
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

// finish settles what streaming could not: Assumption 1 (no value written
// twice to a word, none equal to its initial value), values whose writer
// failed or came later, and Assumption 2 where the method needs it.
func (l *loader) finish() error {
	h := l.h
	// A failed cas writes nothing: when it collided with a cas that may
	// have written the same value, the latter is the writer.
	for _, c := range l.collisions {
		x := c[1]
		cur := l.t.lookup(h, h.word[x]&^blamed, h.nw[x])
		fc, fx := h.failed(h.accOp[cur]), h.failed(h.accOp[x])
		switch {
		case !fc && !fx:
			i, j := h.accOp[cur], h.accOp[x]
			return &AssumptionError{File: h.name, Line: int64(h.line[j]), Assumption: 1,
				Msg: fmt.Sprintf("it writes %s to address %d, as does the cas of line %d", hex(h.nw[x]), h.addr[h.wordOf(x)], h.line[i])}
		case fc && !fx:
			l.t.replace(h, x)
		}
	}
	for _, x := range l.initWrites {
		if i := h.accOp[x]; !h.failed(i) {
			return &AssumptionError{File: h.name, Line: int64(h.line[i]), Assumption: 1,
				Msg: fmt.Sprintf("it writes %s, the initial value of address %d", hex(h.nw[x]), h.addr[h.wordOf(x)])}
		}
	}
	// final resolves access x of value v once every writer is known.
	final := func(x int32, v uint64) {
		w := h.wordOf(x)
		if y := l.t.lookup(h, uint32(w), v); y != none && !h.failed(h.accOp[y]) {
			h.ver[x] = y
			return
		}
		if v == h.initVal[w] {
			h.ver[x] = verGenesis
			return
		}
		h.ver[x] = verDangling
		h.danglingVal[x] = v
		h.dangling = append(h.dangling, x)
	}
	for _, x := range l.tentative {
		// Skip the other words of a failed cas (unresolved since).
		if y := h.ver[x]; y >= 0 && h.failed(h.accOp[y]) {
			final(x, h.nw[y])
		}
	}
	for k, x := range l.deferred {
		if i := h.accOp[x]; h.failed(i) && h.word[x]&blamed == 0 {
			continue
		}
		final(x, l.deferredVal[k])
	}
	l.tentative, l.deferred, l.deferredVal = nil, nil, nil

	// Assumption 2, where the method needs it: at a failed cas's blamed
	// word (a read or a successful cas is ordered after the writer by its
	// reads-from edge; a failed cas by nothing else). h.aux[y] becomes the
	// smallest lo (see package reduce) of a finished operation that read,
	// or expected and succeeded, version y: the moment it was known.
	h.aux = make([]int32, len(h.word))
	for i := range h.aux {
		h.aux[i] = h.n
	}
	for i := int32(0); i < h.n; i++ {
		f := h.flags[i]
		if f&fReturned == 0 || (f&fRead == 0 && f&fOK == 0) {
			continue
		}
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			if y := h.ver[x]; y >= 0 && h.lo[i] < h.aux[y] {
				h.aux[y] = h.lo[i]
			}
		}
	}
	for _, i := range h.failedCAS {
		// The initial value needs no read: nothing precedes genesis. A
		// dangling expected value needs no ordering at all.
		if y := h.ver[h.blamedAccess(i)]; y >= 0 && h.aux[y] > i {
			h.flags[i] |= fNoAux
		}
	}
	return nil
}

// writes reports whether op i's new values may have been written: a cas
// that succeeded or is still pending (a failed cas writes nothing).
func (h *hist) writes(i int32) bool {
	f := h.flags[i]
	return f&fRead == 0 && (f&fOK != 0 || f&fReturned == 0)
}
