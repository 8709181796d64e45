package analyzer

import "unsafe"

// Loading a large history appends to a dozen columns reserved at their
// estimated size, and the first write to each of their pages is a page
// fault: about 140,000 at 10M operations, half a second of system time
// on the goroutine that must take the events in order. With more than one
// core, a prefaulter has another goroutine ask the kernel to map the pages
// just ahead of where the loader writes (populate, without writing to
// them: their contents stay as they are), so the loader finds them mapped.
// It never maps more than about two ticks of growth ahead of the columns'
// lengths, so the resident memory stays what the loader writes.

// memSpan is memory to map: the bytes of a column's capacity beyond its
// length.
type memSpan []byte

// prefaulter maps the pages ahead of the loader's columns.
type prefaulter struct {
	spans chan []memSpan
	prev  [12]int // the columns' lengths at the previous tick
}

// prefaultBytes is the least input (its size hint) worth a prefaulter:
// below, the columns take a few thousand pages, not worth a goroutine per
// check (pmlin fuzz checks thousands of small histories a second).
const prefaultBytes = 64 << 20

// newPrefaulter starts a prefaulter if the input is large (split says how
// large), the system can populate pages and there is a core to spare; nil
// otherwise (its methods then do nothing).
func newPrefaulter(split splitter, sizeHint int64) *prefaulter {
	if split.workers <= 1 || sizeHint < split.prefaultFrom || !canPopulate {
		return nil
	}
	p := &prefaulter{spans: make(chan []memSpan, 1)}
	go func() {
		for spans := range p.spans {
			for _, s := range spans {
				populate(s)
			}
		}
	}()
	return p
}

// tick asks for the pages ahead of each column of h, as far again as it
// grew since the last tick and again as far; if the prefaulter is still
// busy with the last request, it skips this one.
func (p *prefaulter) tick(h *hist) {
	if p == nil {
		return
	}
	spans := make([]memSpan, 0, len(p.prev))
	spans = ahead(spans, h.line, &p.prev[0])
	spans = ahead(spans, h.retGap, &p.prev[1])
	spans = ahead(spans, h.proc16, &p.prev[2])
	spans = ahead(spans, h.flags, &p.prev[3])
	spans = ahead(spans, h.acc, &p.prev[4])
	spans = ahead(spans, h.lo, &p.prev[5])
	spans = ahead(spans, h.word, &p.prev[6])
	spans = ahead(spans, h.ver, &p.prev[7])
	spans = ahead(spans, h.slots.bits, &p.prev[8])
	spans = ahead(spans, h.slots.base, &p.prev[9])
	spans = ahead(spans, h.nw, &p.prev[10])
	spans = ahead(spans, h.owner, &p.prev[11])
	select {
	case p.spans <- spans:
	default:
	}
}

// stop ends the prefaulter's goroutine.
func (p *prefaulter) stop() {
	if p != nil {
		close(p.spans)
	}
}

// ahead appends the span of s's capacity from its length on, twice as
// long as s grew since *prev, and sets *prev.
func ahead[T any](spans []memSpan, s []T, prev *int) []memSpan {
	n, grew := len(s), len(s)-*prev
	*prev = n
	if grew <= 0 || n >= cap(s) {
		return spans
	}
	return append(spans, memSpanOf(s[n:min(cap(s), n+2*grew)]))
}

// memSpanOf is the memory of s.
func memSpanOf[T any](s []T) memSpan {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}
