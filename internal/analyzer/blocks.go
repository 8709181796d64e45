package analyzer

import (
	"iter"
	"math/bits"
)

// Compact containers for the analysis of long histories, where a few bytes
// per operation decide whether a history fits in memory.

// blockList is an append-only list kept in blocks of fixed size. Growing it
// never copies: a slice grown by append leaves each outgrown copy to the
// collector, which, with a heap of hundreds of megabytes, runs rarely, so
// the copies of a list of millions add up to several times its size in
// resident memory before they are reclaimed.
type blockList[T any] struct {
	blocks [][]T
	n      int
}

// blockSize is the capacity of every block but the first, which starts
// at firstBlock and doubles up to blockSize: a fuzz campaign analyses
// thousands of short histories a second, and full blocks for each (a few
// hundred kilobytes) were most of what it allocated.
const (
	blockSize  = 1 << 15
	firstBlock = 1 << 8
)

func (b *blockList[T]) add(v T) {
	// The common case first, room in the last block: the switch of the
	// others, on every add, showed in loading (the loader adds to several
	// lists per access).
	if k := len(b.blocks); k > 0 {
		if last := &b.blocks[k-1]; len(*last) < cap(*last) {
			*last = append(*last, v)
			b.n++
			return
		}
	}
	b.grow(v)
}

// grow is add when the last block is full, or there is none.
func (b *blockList[T]) grow(v T) {
	switch {
	case b.n == 0 && len(b.blocks) == 0:
		b.blocks = append(b.blocks, make([]T, 0, firstBlock))
	case b.n < blockSize && b.n == cap(b.blocks[0]):
		grown := make([]T, b.n, min(2*b.n, blockSize))
		copy(grown, b.blocks[0])
		b.blocks[0] = grown
	case b.n&(blockSize-1) == 0 && b.n > 0:
		b.blocks = append(b.blocks, make([]T, 0, blockSize))
	}
	last := &b.blocks[len(b.blocks)-1]
	*last = append(*last, v)
	b.n++
}

// len is the number of items.
func (b *blockList[T]) len() int { return b.n }

// all yields the items in the order they were added.
func (b *blockList[T]) all() iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		k := 0
		for _, blk := range b.blocks {
			for _, v := range blk {
				if !yield(k, v) {
					return
				}
				k++
			}
		}
	}
}

// at is item k.
func (b *blockList[T]) at(k int) T { return b.blocks[k/blockSize][k%blockSize] }

// rankIndex is a set of dense ids (accesses, operations) that numbers its
// members densely in id order: a bit per id, and the number of members
// before each run of 64 ids, so that a member's number is a load and a
// popcount, 12 bits per id instead of a 4-byte index.
//
// A set of at most denseMax ids built by push also keeps dense: each id's
// number, a load without the popcount (the analysis of a small history,
// as fuzz checks one a run, asks it of every version several times per
// evaluation; the 4 bytes per id are nothing there).
type rankIndex struct {
	bits []uint64
	base []int32
	n    int32 // members so far
	// dense[x] is of(x), or dense is nil: beyond denseMax ids (noDense),
	// or a set built by reset, set and count.
	dense   []int32
	noDense bool
}

// denseMax is the most ids a rankIndex keeps dense for.
const denseMax = 1 << 16

// push appends k ids starting at first (the ids so far: first must be
// their count), members if in.
func (r *rankIndex) push(first int32, k int, in bool) {
	for x := first; x < first+int32(k); x++ {
		if x&63 == 0 {
			r.bits = append(r.bits, 0)
			r.base = append(r.base, r.n)
		}
		switch {
		case r.noDense:
		case x < denseMax:
			r.dense = append(r.dense, r.n)
		default:
			r.dense, r.noDense = nil, true
		}
		if in {
			r.bits[x>>6] |= 1 << (uint(x) & 63)
			r.n++
		}
	}
}

// reset makes r the empty set of ids 0..size-1, reusing its arrays; set
// adds members, then count numbers them.
func (r *rankIndex) reset(size int) {
	words := (size + 63) / 64
	if cap(r.bits) < words {
		r.bits, r.base = make([]uint64, words), make([]int32, words)
	}
	r.bits, r.base = r.bits[:words], r.base[:words]
	clear(r.bits)
	r.n = 0
	r.dense, r.noDense = nil, true
}

func (r *rankIndex) set(x int32) { r.bits[x>>6] |= 1 << (uint(x) & 63) }

// count numbers the members after set.
func (r *rankIndex) count() {
	n := int32(0)
	for k, w := range r.bits {
		r.base[k] = n
		n += int32(bits.OnesCount64(w))
	}
	r.n = n
}

// has reports whether x is a member.
func (r *rankIndex) has(x int32) bool { return r.bits[x>>6]&(1<<(uint(x)&63)) != 0 }

// of is the number of member x (0, 1, ...): the members before it.
func (r *rankIndex) of(x int32) int32 {
	if r.dense != nil {
		return r.dense[x]
	}
	w := x >> 6
	return r.base[w] + int32(bits.OnesCount64(r.bits[w]&(1<<(uint(x)&63)-1)))
}
