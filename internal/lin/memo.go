package lin

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
)

// memo is the set of configurations a search has seen, as byte keys. The
// keys live in one arena and the table holds their hashes and offsets:
// nothing in it is a pointer, so the garbage collector does not scan
// millions of keys, and its size is known exactly for the memory bound.
// It is exact: a hash only finds candidates, the bytes decide.
type memo struct {
	seed  maphash.Seed
	arena []byte // each key: its length (uvarint), then its bytes
	slots []slot // open addressing, linear probing; a power of two
	n     int
}

type slot struct {
	hash uint64 // 0: empty
	off  uint64 // of the key in arena
}

func newMemo() *memo {
	return &memo{seed: maphash.MakeSeed(), slots: make([]slot, 16)}
}

// add adds key and says whether it was new.
func (m *memo) add(key []byte) bool {
	h := maphash.Bytes(m.seed, key) | 1 // never 0, the empty slot's
	mask := uint64(len(m.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s.hash == 0 {
			m.slots[i] = slot{hash: h, off: uint64(len(m.arena))}
			m.arena = binary.AppendUvarint(m.arena, uint64(len(key)))
			m.arena = append(m.arena, key...)
			if m.n++; 4*m.n > 3*len(m.slots) {
				m.grow()
			}
			return true
		}
		if s.hash == h && bytes.Equal(m.key(s.off), key) {
			return false
		}
	}
}

func (m *memo) key(off uint64) []byte {
	n, w := binary.Uvarint(m.arena[off:])
	start := off + uint64(w)
	return m.arena[start : start+n]
}

func (m *memo) grow() {
	old := m.slots
	m.slots = make([]slot, 2*len(old))
	mask := uint64(len(m.slots) - 1)
	for _, s := range old {
		if s.hash == 0 {
			continue
		}
		i := s.hash & mask
		for m.slots[i].hash != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = s
	}
}

// bytes is the memory the memo holds.
func (m *memo) bytes() int64 {
	return int64(cap(m.arena)) + int64(len(m.slots))*16
}
