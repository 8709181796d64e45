package record

import (
	"fmt"
	"sync/atomic"
)

// Shared logs: the per-worker logs of a process that may be killed at any
// moment, in a MAP_SHARED file mapping that outlives it. Layout, in 64-bit
// words:
//
//	0        magic
//	1        threads
//	2        capacity of each section, in words
//	3 + i*(capacity+1)        section i: its committed length
//	3 + i*(capacity+1) + 1 .. its records
//
// A worker writes a record and then publishes the section's length with a
// sequentially consistent store, so a reader (the parent, after the kill)
// sees whole records only.
const sharedMagic = 0x32474f4c4e4c4d50 // "PMLNLOG2": records of one head word (log.go)

// SharedLogWords is the size in words of shared logs for threads workers
// with room for ops operations each.
func SharedLogWords(threads, k, ops int) int {
	return 3 + threads*(1+sectionWords(k, ops))
}

func sectionWords(k, ops int) int {
	return ops * opWords(k)
}

// LayoutSharedLogs formats mem (SharedLogWords(threads, k, ops) words).
func LayoutSharedLogs(mem []uint64, threads, k, ops int) error {
	if len(mem) < SharedLogWords(threads, k, ops) {
		return fmt.Errorf("driver: %d words for shared logs, %d needed", len(mem), SharedLogWords(threads, k, ops))
	}
	clear(mem)
	mem[1] = uint64(threads)
	mem[2] = uint64(sectionWords(k, ops))
	atomic.StoreUint64(&mem[0], sharedMagic)
	return nil
}

type section struct {
	commit *uint64
	data   []uint64
}

func sharedSections(mem []uint64, threads int) ([]section, error) {
	if len(mem) < 3 || atomic.LoadUint64(&mem[0]) != sharedMagic {
		return nil, fmt.Errorf("driver: shared logs not formatted")
	}
	if mem[1] != uint64(threads) {
		return nil, fmt.Errorf("driver: shared logs for %d workers, %d expected", mem[1], threads)
	}
	c := mem[2]
	if c > uint64(len(mem)) || 3+uint64(threads)*(c+1) > uint64(len(mem)) {
		return nil, fmt.Errorf("driver: shared logs of %d words cannot hold %d sections of %d", len(mem), threads, c)
	}
	out := make([]section, threads)
	for i := range out {
		b := 3 + uint64(i)*(c+1)
		out[i] = section{commit: &mem[b], data: mem[b+1 : b+1+c : b+1+c]}
	}
	return out, nil
}

// ReadSharedLogs returns a copy of the committed records of each worker's
// section of mem.
func ReadSharedLogs(mem []uint64, threads int) ([][]uint64, error) {
	secs, err := sharedSections(mem, threads)
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, threads)
	for i, s := range secs {
		n := atomic.LoadUint64(s.commit)
		if n > uint64(len(s.data)) {
			return nil, fmt.Errorf("driver: shared log %d claims %d words of %d", i, n, len(s.data))
		}
		out[i] = append([]uint64(nil), s.data[:n]...)
	}
	return out, nil
}

// SharedLogEvents is the number of records committed so far in mem (a
// parent watching its child's progress).
func SharedLogEvents(mem []uint64, threads int) int64 {
	secs, err := sharedSections(mem, threads)
	if err != nil {
		return 0
	}
	var n int64
	for _, s := range secs {
		n += int64(atomic.LoadUint64(s.commit))
	}
	return n
}
