package analyzer

import (
	"cmp"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/pmlin/pmlin/internal/history"
)

// Reads-from resolution maps (word, value) to the access of the cas that
// wrote that value there. While streaming, a ring of each word's recent
// writes answers most lookups from cache. What it cannot answer (an old
// value, a value whose writer came later or failed) is deferred, and
// settled at the end by a radix-partitioned hash join: writers and queries
// are split by hash into partitions small enough for their hash table to
// fit in cache, so building the index costs a few sequential passes
// instead of one cache and TLB miss per write (which dominated the whole
// check at 10 million operations). The same pass checks Assumption 1.

func mix(word uint32, v uint64) uint32 {
	x := v ^ uint64(word)*0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return uint32(x)
}

// keyed is a (word, value) with an access: a query. Writers are held as
// hashed (8 bytes instead of 16): their key is in the access arrays, read
// back only when hashes match, which keeps the peak memory of the join low.
type keyed struct {
	val  uint64
	word uint32
	acc  int32
}

type hashed struct {
	hash uint32
	acc  int32
}

// partitionBits chooses 2^bits partitions of about per writers each
// (splitter.perPartition).
func partitionBits(writers, per int) uint {
	b := uint(bits.Len(uint(writers / per)))
	return min(b, 16)
}

// partitionRange splits the items produced by the ranges of [0, n) by the
// top bits of their hash (as hash(item) gives it): each(lo, hi, emit)
// emits those of [lo, hi), in order. Two passes, count then fill, without
// an intermediate copy of the items; the parts of the range take both on
// split's goroutines (on a large history, done serially, they were the
// longest serial stretch of finish). Each part fills its own run of every
// bucket, the runs in part order, so the output is that of one pass over
// [0, n) whatever the workers.
func partitionRange[T any](split splitter, n int, bits uint, hash func(T) uint32, each func(lo, hi int, emit func(T))) (out []T, off []int32) {
	nb := 1 << bits
	shift := 32 - bits // a shift by 32 (bits 0) gives bucket 0
	parts := split.parts(n)
	if nb == 1 && parts == 1 {
		// One bucket, one part (a small history): the items in the
		// order they come, in one pass instead of a count and a fill.
		out = make([]T, 0, n)
		each(0, n, func(t T) { out = append(out, t) })
		return out, []int32{0, int32(len(out))}
	}
	cur := make([]int32, parts*nb) // per part and bucket: a count, then where its run starts
	split.run(n, func(k, lo, hi int) {
		c := cur[k*nb : (k+1)*nb]
		each(lo, hi, func(t T) { c[hash(t)>>shift]++ })
	})
	off = runStarts(cur, parts, nb)
	out = make([]T, off[nb])
	split.run(n, func(k, lo, hi int) {
		c := cur[k*nb : (k+1)*nb]
		each(lo, hi, func(t T) {
			b := hash(t) >> shift
			out[c[b]] = t
			c[b]++
		})
	})
	return out, off
}

// runStarts turns cur, the counts of parts parts for nb buckets each, into
// where each part's run of each bucket starts (the runs of a bucket in
// part order), and returns where each bucket starts, with the total last.
func runStarts(cur []int32, parts, nb int) (off []int32) {
	off = make([]int32, nb+1)
	sum := int32(0)
	for b := 0; b < nb; b++ {
		off[b] = sum
		for k := 0; k < parts; k++ {
			c := cur[k*nb+b]
			cur[k*nb+b] = sum
			sum += c
		}
	}
	off[nb] = sum
	return off
}

// partitionWriters is partitionRange of the writers' accesses (every word
// of a cas that succeeded or may have), written out by hand because the
// writers are most of the join's items: the generic version's calls of a
// closure to emit, to hash and to bucket each one, in both passes, were
// about 6 % of the instructions of a 1M-op check (callgrind).
func (h *hist) partitionWriters(split splitter, bits uint) (out []hashed, off []int32) {
	nb, n := 1<<bits, int(h.n)
	shift := 32 - bits
	parts := split.parts(n)
	if nb == 1 && parts == 1 {
		// One bucket, one part (a small history): one pass, into room
		// for every slot (each writer's access has one).
		c := []int32{0}
		out = make([]hashed, len(h.nw))
		h.bucketWriters(0, int32(n), shift, c, out)
		return out[:c[0]], []int32{0, c[0]}
	}
	cur := make([]int32, parts*nb)
	split.run(n, func(k, lo, hi int) {
		h.bucketWriters(int32(lo), int32(hi), shift, cur[k*nb:(k+1)*nb], nil)
	})
	off = runStarts(cur, parts, nb)
	out = make([]hashed, off[nb])
	split.run(n, func(k, lo, hi int) {
		h.bucketWriters(int32(lo), int32(hi), shift, cur[k*nb:(k+1)*nb], out)
	})
	return out, off
}

// bucketWriters counts the writers' accesses of the operations [lo, hi)
// in c by bucket (their hash's top bits, hash >> shift) or, given out,
// stores each at out[c[its bucket]] and counts on.
func (h *hist) bucketWriters(lo, hi int32, shift uint, c []int32, out []hashed) {
	for i := lo; i < hi; i++ {
		if !h.writes(i) {
			continue
		}
		s := h.slots.of(int32(h.acc[i]))
		for x, end := int32(h.acc[i]), int32(h.acc[i+1]); x < end; x++ {
			hs := mix(h.word[x]&^blamed, h.nw[s])
			b := hs >> shift
			if out != nil {
				out[c[b]] = hashed{hash: hs, acc: x}
			}
			c[b]++
			s++
		}
	}
}

// finish settles what streaming could not: values whose writer failed,
// came later, or fell out of the ring; Assumption 1 (no value written twice
// to a word, none equal to its initial value); and Assumption 2 where the
// method needs it.
func (l *loader) finish() error {
	h := l.h
	for _, x := range l.initWrites.all() {
		if i := h.opOf(x); !h.failed(i) {
			return &AssumptionError{File: h.name, Line: int64(h.line[i]), Assumption: 1,
				Msg: fmt.Sprintf("it writes %s, the initial value of address %d", history.FormatValue(h.newVal(x)), h.addr[h.wordOf(x)])}
		}
	}
	if err := l.join(); err != nil {
		return err
	}
	h.settleValued()
	// On a large history, collect the index now so that the arrays
	// allocated next reuse its memory instead of raising the peak; the
	// collection is cheap because the live arrays hold no pointers.
	if h.n >= 1<<18 {
		runtime.GC()
	}
	h.assumption2(l.split)
	return nil
}

// join resolves the queries streaming left open against every writer, by
// the radix-partitioned hash join, and checks Assumption 1 on the way.
func (l *loader) join() error {
	h := l.h
	// The writers: every cas that succeeded or may have (a failed cas
	// writes nothing).
	pbits := l.joinBits()
	wp, woff := h.partitionWriters(l.split, pbits)
	// The queries: accesses resolved to a writer that failed after all,
	// those deferred, and those of the failures that report values, taken
	// as one range (partitioned on the workers too).
	nt, nd := l.tentative.len(), l.deferred.len()
	qp, qoff := partitionRange(l.split, nt+nd+l.valuedQ.len(), pbits, func(k keyed) uint32 { return mix(k.word, k.val) }, func(lo, hi int, emit func(keyed)) {
		for k := lo; k < hi; k++ {
			switch {
			case k < nt:
				// The other words of a failed cas were unresolved since
				// (all of them, for one that reports values).
				x := l.tentative.at(k)
				if y := h.ver[x]; y >= 0 && h.failed(h.writerOp(y)) {
					emit(keyed{val: h.newVal(y), word: h.word[x] &^ blamed, acc: x})
				}
			case k < nt+nd:
				// A failed cas's expected values matter only at its
				// blamed word, and one that reports values keeps that one
				// apart. (A read never failed.)
				x := l.deferred.at(k - nt)
				if h.slots.has(x) {
					if i := h.opOf(x); h.failed(i) && (h.word[x]&blamed == 0 || h.flags[i]&fValued != 0) {
						continue
					}
				}
				emit(keyed{val: l.deferredVal.at(k - nt), word: h.word[x] &^ blamed, acc: x})
			default:
				q := l.valuedQ.at(k - nt - nd)
				emit(keyed{val: q.val, word: q.word &^ blamed, acc: q.acc})
			}
		}
	})
	l.tentative, l.deferred, l.deferredVal, l.valuedQ = blockList[int32]{}, blockList[int32]{}, blockList[uint64]{}, blockList[keyed]{}
	l.recent = nil
	// The partitions are independent: each resolves its own queries (an
	// access is queried once). What they find besides is kept per part
	// and merged in partition order, so the first Assumption 1 error and
	// the dangling list are those of the partitions taken in order.
	type part struct {
		err      error
		dangling []danglingRead
	}
	parts := make([]part, l.split.parts(len(woff)-1))
	l.split.run(len(woff)-1, func(k, lo, hi int) {
		var slots []uint32 // a partition's table: index into wp + 1; 0 empty
		for b := lo; b < hi && parts[k].err == nil; b++ {
			ws := wp[woff[b]:woff[b+1]]
			size := 16
			for size < 2*len(ws) {
				size <<= 1
			}
			if cap(slots) < size {
				slots = make([]uint32, size)
			}
			slots = slots[:size]
			clear(slots)
			parts[k].err = h.joinPartition(ws, qp[qoff[b]:qoff[b+1]], slots, &parts[k].dangling)
		}
	})
	for _, p := range parts {
		if p.err != nil {
			return p.err
		}
		for _, d := range p.dangling {
			h.danglingVal[d.acc] = d.val
			h.dangling = append(h.dangling, d.acc)
		}
	}
	return nil
}

// joinBits is the join's partitionBits: the number of writers' accesses
// counted on the workers, unless fewer cas and swap accesses than a
// partition holds were invoked (a small history: one partition whatever
// the count, and no pass to count it).
func (l *loader) joinBits() uint {
	h, per := l.h, l.split.perPartition()
	if len(h.nw) < per {
		return 0
	}
	counts := make([]int, l.split.parts(int(h.n)))
	l.split.run(int(h.n), func(k, lo, hi int) {
		c := 0
		for i := int32(lo); i < int32(hi); i++ {
			if h.writes(i) {
				c += int(h.acc[i+1] - h.acc[i])
			}
		}
		counts[k] = c
	})
	nw := 0
	for _, c := range counts {
		nw += c
	}
	return partitionBits(nw, per)
}

// danglingRead is an access whose value nobody wrote at its word.
type danglingRead struct {
	acc int32
	val uint64
}

// joinPartition indexes one partition's writers in slots (an open
// addressing table, cleared), rejecting a value written twice to a word
// (Assumption 1), and resolves the partition's queries, appending those
// that nobody wrote to dangling.
func (h *hist) joinPartition(ws []hashed, qs []keyed, slots []uint32, dangling *[]danglingRead) error {
	mask := uint32(len(slots) - 1)
	same := func(x int32, word uint32, val uint64) bool {
		return h.word[x]&^blamed == word && h.newVal(x) == val
	}
	for k := range ws {
		w := &ws[k]
		for s := w.hash & mask; ; s = (s + 1) & mask {
			if slots[s] == 0 {
				slots[s] = uint32(k) + 1
				break
			}
			if o := &ws[slots[s]-1]; o.hash == w.hash && same(o.acc, h.word[w.acc]&^blamed, h.newVal(w.acc)) {
				i, j := h.opOf(o.acc), h.opOf(w.acc)
				if i > j {
					i, j = j, i
				}
				return &AssumptionError{File: h.name, Line: int64(h.line[j]), Assumption: 1,
					Msg: fmt.Sprintf("it writes %s to address %d, as does the %s of %s", history.FormatValue(h.newVal(w.acc)), h.addr[h.wordOf(w.acc)], h.kind(i), h.names.Op(int64(h.line[i])))}
			}
		}
	}
	for _, q := range qs {
		found := none
		qh := mix(q.word, q.val)
		for s := qh & mask; slots[s] != 0; s = (s + 1) & mask {
			if o := &ws[slots[s]-1]; o.hash == qh && same(o.acc, q.word, q.val) {
				found = o.acc
				break
			}
		}
		switch {
		case found != none:
			h.ver[q.acc] = found
		case q.val == h.initVal[q.word]:
			h.ver[q.acc] = verGenesis
		default:
			h.ver[q.acc] = verDangling
			*dangling = append(*dangling, danglingRead{acc: q.acc, val: q.val})
		}
	}
	return nil
}

// settleValued orders the valued failures by blamed access, for lookups,
// and finds those that contradict themselves: they report, at the word they
// blame, the value they expected there.
func (h *hist) settleValued() {
	if len(h.valued) == 0 {
		return
	}
	slices.SortFunc(h.valued, func(a, b valuedFail) int { return cmp.Compare(a.acc, b.acc) })
	for _, v := range h.valued {
		if h.valueOf(v.acc) == v.val {
			h.contra = append(h.contra, h.opOf(v.acc))
		}
	}
}

// assumption2 marks the failed cas that break Assumption 2 where the
// method needs it, and lists h.observedPending on the way (a pass over the
// same observers' versions, which every evaluation would make again): at a failed cas's blamed word (a read or a successful
// cas is ordered after the writer by its reads-from edge; a failed cas by
// nothing else). h.aux[y] becomes the smallest lo (see package reduce) of
// a finished operation that read, expected and succeeded, or replaced
// (a swap) version y, or reported it in a failure: the moment it was
// known. (A swap expects nothing: the assumption does not apply to it.)
//
// The readers split over the workers (done serially, this was the longest
// serial stretch of finish after the join): several may lower the same
// aux entry, so they do it by compare-and-swap, and the minimum is the
// same in any order. With one part the plain stores are kept (an atomic
// costs a single core for nothing).
func (h *hist) assumption2(split splitter) {
	h.aux = make([]int32, len(h.nw))
	split.run(len(h.aux), func(_, lo, hi int) {
		for i := range h.aux[lo:hi] {
			h.aux[lo+i] = h.n
		}
	})
	shared := split.parts(int(h.n)) > 1
	pending := len(h.pendingW) > 0
	found := make([][]int32, split.parts(int(h.n)))
	split.run(int(h.n), func(k, lo, hi int) {
		// The columns in locals: the stores through lowerTo made the
		// compiler load each one from h again at every access.
		flags, acc, ver, aux, opLo, slots, owner := h.flags, h.acc, h.ver, h.aux, h.lo, h.slots, h.owner
		var out []int32
		for i := int32(lo); i < int32(hi); i++ {
			f := flags[i]
			if f&fReturned == 0 || f&(fRead|fOK|fValued) == 0 {
				continue
			}
			for x, end := int32(acc[i]), int32(acc[i+1]); x < end; x++ {
				if y := ver[x]; y >= 0 {
					s := slots.of(y)
					lowerTo(&aux[s], opLo[i], shared)
					if w := owner[s]; pending && flags[w]&(fReturned|fRead) == 0 {
						out = append(out, w)
					}
				}
			}
		}
		found[k] = out
	})
	h.observedPending = slices.Concat(found...)
	split.run(len(h.failedCAS), func(_, lo, hi int) {
		for _, i := range h.failedCAS[lo:hi] {
			// The initial value needs no read: nothing precedes genesis. A
			// dangling expected value needs no ordering at all.
			if y := h.ver[h.blamedAccess(i)]; y >= 0 && h.aux[h.slots.of(y)] > i {
				h.flags[i] |= fNoAux
			}
		}
	})
}

// lowerTo sets *p to v if v is smaller, by compare-and-swap when other
// goroutines may lower it at the same time.
func lowerTo(p *int32, v int32, shared bool) {
	if !shared {
		if v < *p {
			*p = v
		}
		return
	}
	for {
		old := atomic.LoadInt32(p)
		if v >= old || atomic.CompareAndSwapInt32(p, old, v) {
			return
		}
	}
}

// writes reports whether op i's new values may have been written: a cas
// that succeeded or is still pending, or a swap (a failed cas writes
// nothing).
func (h *hist) writes(i int32) bool {
	f := h.flags[i]
	return f&fRead == 0 && (f&fOK != 0 || f&fReturned == 0)
}
