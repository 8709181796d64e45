package analyzer

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPopulateMapsPages: memory populated ahead is resident before anything
// writes to it (mincore), where fresh memory is not.
func TestPopulateMapsPages(t *testing.T) {
	const page = 4096
	resident := func(s []uint64) int {
		b := memSpanOf(s)
		// mincore wants a page-aligned start: the whole pages inside s.
		skip := int((page - uintptr(unsafe.Pointer(unsafe.SliceData(b)))%page) % page)
		n := (len(b) - skip) &^ (page - 1)
		vec := make([]byte, n/page)
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[skip])), uintptr(n), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Fatal(errno)
		}
		count := 0
		for _, v := range vec {
			count += int(v & 1)
		}
		return count
	}
	const n = 8 << 20 // 64 MiB: 16384 pages
	s := make([]uint64, 0, n)[:n]
	before := resident(s)
	if before > 1000 {
		t.Skipf("fresh memory already has %d resident pages: nothing to compare", before)
	}
	populate(memSpanOf(s))
	after := resident(s)
	t.Logf("resident pages of 16384: %d before, %d after populating", before, after)
	if after < 16000 {
		t.Fatalf("after populating, %d of 16384 pages are resident", after)
	}
}
