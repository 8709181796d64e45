package pmem

import (
	"bytes"
	"testing"
)

// FuzzParseHeader checks that the header parser never panics, and that what
// it accepts encodes back to the same bytes.
func FuzzParseHeader(f *testing.F) {
	good := newHeader(1024).encode()
	f.Add(good[:headerUsed])
	f.Add(good[:20])
	f.Add([]byte("PMLINRGN"))
	f.Add([]byte{})
	bad := append([]byte(nil), good[:headerUsed]...)
	bad[16] = 0
	f.Add(bad)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHeader(b)
		if err != nil {
			return
		}
		if !bytes.Equal(h.encode()[:headerUsed], b[:headerUsed]) {
			t.Fatalf("accepted header %x re-encodes as %x", b[:headerUsed], h.encode()[:headerUsed])
		}
		if h.FileSize() <= HeaderSize {
			t.Fatalf("accepted header with file size %d", h.FileSize())
		}
	})
}
