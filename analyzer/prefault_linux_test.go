package analyzer

import (
	"syscall"
	"testing"
)

// TestPopulateMapsPages: writing to memory populated ahead takes (almost)
// no page fault, where writing to fresh memory takes one per page.
func TestPopulateMapsPages(t *testing.T) {
	faults := func(s []uint64) int64 {
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		for k := 0; k < len(s); k += 512 {
			s[k] = 1
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		return after.Minflt - before.Minflt
	}
	const n = 8 << 20 // 64 MiB: 16384 pages
	fresh := faults(make([]uint64, 0, n)[:n])
	s := make([]uint64, 0, n)
	populate(memSpanOf(s[:n]))
	populated := faults(s[:n])
	t.Logf("page faults writing 16384 pages: %d fresh, %d populated", fresh, populated)
	if fresh < 1000 {
		t.Skipf("fresh memory took %d faults: huge pages or memory already mapped, nothing to compare", fresh)
	}
	if populated > fresh/10 {
		t.Fatalf("populated memory took %d page faults, fresh memory %d", populated, fresh)
	}
}
