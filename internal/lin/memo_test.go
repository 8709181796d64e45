package lin

import (
	"encoding/binary"
	"testing"
)

// TestMemo: every key is new once and seen after, across growth; keys that
// are prefixes of each other, and the empty key, are distinct.
func TestMemo(t *testing.T) {
	m := newMemo()
	key := func(i int) []byte { return binary.AppendUvarint(nil, uint64(i)*2654435761) }
	for i := range 50000 {
		if !m.add(key(i)) {
			t.Fatalf("key %d seen before it was added", i)
		}
	}
	for i := range 50000 {
		if m.add(key(i)) {
			t.Fatalf("key %d new again", i)
		}
	}
	for _, k := range [][]byte{{}, {1}, {1, 0}, {1, 0, 0}} {
		if !m.add(k) || m.add(k) {
			t.Fatalf("key %v", k)
		}
	}
	if m.n != 50004 || m.bytes() < int64(len(m.arena)) {
		t.Fatalf("%d keys, %d bytes", m.n, m.bytes())
	}
}
