package analyzer

import (
	"sync"
	"sync/atomic"
)

// minPart is the least part worth a goroutine: below, handing it over
// costs more than it saves.
const minPart = 1 << 14

// splitter cuts ranges into parts for up to workers goroutines, each part
// at least least long (minPart but in tests, which split small histories
// too). prefaultFrom is the least input size (hint) for which loading maps
// its pages ahead on a spare core (prefaultBytes but in tests, which do it
// for every size).
type splitter struct {
	workers, least int
	prefaultFrom   int64
}

// parts is the number of parts run cuts [0, n) into.
func (s splitter) parts(n int) int {
	if s.workers > 1 && n >= 2*s.least {
		return min(4*s.workers, n/s.least)
	}
	return 1
}

// perPartition is the number of writers per partition of the join
// (partitionBits): 8192, so that a partition's table fits in L2 cache, but
// in tests, which split small histories too.
func (s splitter) perPartition() int {
	if s.least < minPart {
		return s.least
	}
	return 8192
}

// aside calls f on a goroutine of its own, beside the caller's work,
// when [0, n) is split (s.parts(n) > 1: several cores and enough work to
// be worth a goroutine), else at once on the caller's goroutine. The
// returned function waits until f is done; call it before using what f
// writes.
func (s splitter) aside(n int, f func()) (wait func()) {
	if s.parts(n) <= 1 {
		f()
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return func() { <-done }
}

// run calls f on the s.parts(n) parts of [0, n), on up to s.workers
// goroutines, and waits. A part's ends are multiples of 64 (but the
// last), so that a bitset indexed like the range is written by one part per
// word; results kept per part merge in part order, which makes them the
// same whatever the number of workers. With one worker, f runs on the
// caller's goroutine, in part order.
func (s splitter) run(n int, f func(part, lo, hi int)) {
	parts := s.parts(n)
	if parts == 1 {
		f(0, 0, n)
		return
	}
	size := (n/parts + 63) &^ 63
	bounds := func(p int) (int, int) {
		lo := min(p*size, n)
		hi := min(lo+size, n)
		if p == parts-1 {
			hi = n
		}
		return lo, hi
	}
	var next atomic.Int32
	var wg sync.WaitGroup
	for w := 0; w < min(s.workers, parts); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := int(next.Add(1)) - 1; p < parts; p = int(next.Add(1)) - 1 {
				lo, hi := bounds(p)
				f(p, lo, hi)
			}
		}()
	}
	wg.Wait()
}
