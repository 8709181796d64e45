package analyzer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// canPopulate: Linux populates pages on request (MADV_POPULATE_WRITE,
// since 5.14; an older kernel refuses it, and then nothing is mapped
// ahead).
const canPopulate = true

// populate maps the whole pages inside s writable, as a write to each
// would, without writing: their contents do not change. Errors are
// ignored (the pages are then mapped when first written, as without it).
func populate(s memSpan) {
	const page = 4096
	start := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	skip := int((page - start%page) % page)
	if n := (len(s) - skip) &^ (page - 1); n > 0 {
		_ = unix.Madvise(s[skip:skip+n], unix.MADV_POPULATE_WRITE)
	}
}
