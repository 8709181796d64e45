package history

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkDecodeChunk measures a worker's decoding of one chunk of the
// lines pmlin gen writes (reads, cas and their responses, 1-3 words), the
// part of reading that runs on every core.
func BenchmarkDecodeChunk(b *testing.B) {
	c := benchChunk()
	b.SetBytes(int64(len(c.buf)))
	for b.Loop() {
		c.decode(DefaultMaxLineBytes)
	}
	for _, rec := range c.recs {
		if rec.kind == fastNone {
			b.Fatalf("line %d not decoded by the fast path", rec.line)
		}
	}
}

// BenchmarkApplyChunk measures applying a decoded chunk's lines to the
// Reader's state in file order (applyFast), the part of reading that a
// parallel Reader runs on one goroutine whatever the cores. Each process's
// operations return before its next, so the chunk applies again and again.
func BenchmarkApplyChunk(b *testing.B) {
	c := benchChunk()
	c.decode(DefaultMaxLineBytes)
	r := NewReader(bytes.NewReader(nil), "bench", Options{})
	r.format = Text
	b.SetBytes(int64(len(c.buf)))
	for b.Loop() {
		for i := range c.recs {
			if _, ok, err := r.applyFast(&c.recs[i].fastRec, c.nums); !ok || err != nil {
				b.Fatalf("line %d: ok %v, err %v", c.recs[i].line, ok, err)
			}
		}
	}
}

// benchChunk is a chunk of the lines pmlin gen writes (reads, cas and
// their responses, 1-3 words).
func benchChunk() *chunk {
	var buf bytes.Buffer
	for i := 0; buf.Len() < chunkBytes-200; i++ {
		p, a := i%8, uint64(i*7919%1000)
		switch i % 4 {
		case 0:
			fmt.Fprintf(&buf, "%d inv read %d %d\n%d ret 0x%x 0\n", p, a, a+1, p, 0x100000001+uint64(i))
		case 1:
			fmt.Fprintf(&buf, "%d inv cas %d:0x%x:0x%x %d:0:0x%x\n%d ret ok\n", p, a, 0x200000001+uint64(i), 0x300000001+uint64(i), a+2, 0x300000002+uint64(i), p)
		case 2:
			fmt.Fprintf(&buf, "%d inv read %d\n%d ret 0x%x\n", p, a, p, 0x100000001+uint64(i))
		default:
			fmt.Fprintf(&buf, "%d inv cas %d:0:0x%x\n%d ret fail %d\n", p, a, 0x300000001+uint64(i), p, a)
		}
	}
	return &chunk{buf: buf.Bytes()}
}
