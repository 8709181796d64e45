package tie

// Merge is the k-way merge by timestamp that every merge of pmlin runs
// (pmlin merge and the Go API's Check, the text recording of internal/record and
// its line count of a binary one, the reader of binary histories): the
// rule of the package doc, written once. Each stream is a process's steps
// in the order it took them (or a crash on its own); the caller says what
// each stream's next step is (Set), that it is not known yet (Wait) or
// that there is none (Done), and takes, again and again, the step Next
// gives, telling Place where it put it.
//
// Next gives the head of the earliest timestamp, then of the least class
// (Head.class), then of the lower stream index; a stream that waits goes
// before every head (its next step might be least), so a caller that
// reads its streams as they come reads on until none waits. The streams
// are the leaves of a tournament tree: a change of one stream's head
// replays its path to the root, log2 of the streams' comparisons of two
// words (key), where a scan of every head took one per stream (pmlin merge
// has a stream per crash) and a heap two per level through interface
// calls.
//
// The zero value merges no stream; Reset starts a merge.
type Merge struct {
	heads []Head
	keys  []key   // per leaf: its state and head, as the tree compares them
	win   []int32 // win[v], v from 1: the leaf that wins the subtree of node v; win[size+i] = i
	size  int     // leaves: a power of two, at least the streams
	watch watch
}

// key is a leaf as the tree orders it: by state (waiting, ready, done),
// then by timestamp, then by class, then by leaf index, so that no two
// keys are equal. The tag holds state<<40 | class<<32 | leaf; a leaf that
// is not ready has timestamp and class 0.
type key struct {
	ts  uint64
	tag uint64
}

// less is the tree's order of two leaves' keys.
func (a key) less(b key) bool {
	if sa, sb := a.tag>>40, b.tag>>40; sa != sb {
		return sa < sb
	}
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	return a.tag < b.tag
}

// A stream's state, in the order of Next's preference.
const (
	waiting = iota
	ready
	done
)

// Status says what Next found.
type Status uint8

const (
	// Step: a stream's head goes next.
	Step Status = iota
	// Wait: a stream waits; its next step must be known (Set) or its end
	// (Done) before the merge goes on.
	Wait
	// End: every stream is done.
	End
)

// Reset starts a merge of n streams, each waiting, keeping the memory of
// the last merge.
func (m *Merge) Reset(n int) {
	m.size = 1
	for m.size < n {
		m.size *= 2
	}
	m.heads = grow(m.heads, m.size)
	m.keys = grow(m.keys, m.size)
	m.win = grow(m.win, 2*m.size)
	clear(m.heads)
	for i := range m.keys {
		st := uint64(waiting)
		if i >= n {
			st = done
		}
		m.keys[i] = key{tag: st<<40 | uint64(i)}
		m.win[m.size+i] = int32(i)
	}
	for v := m.size - 1; v >= 1; v-- {
		a, b := m.win[2*v], m.win[2*v+1]
		if m.keys[b].less(m.keys[a]) {
			a = b
		}
		m.win[v] = a
	}
	m.watch = watch{}
}

// grow is s with n items, reusing its memory.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Set says that h is stream i's next step.
func (m *Merge) Set(i int, h Head) {
	m.heads[i] = h
	m.keys[i] = key{ts: h.TS, tag: ready<<40 | uint64(h.class())<<32 | uint64(i)}
	m.replay(i)
}

// Wait says that stream i's next step is not known yet.
func (m *Merge) Wait(i int) {
	m.keys[i] = key{tag: waiting<<40 | uint64(i)}
	m.replay(i)
}

// Done says that stream i has no step left (a later Set or Wait may bring
// it back, for a caller that merges what it has so far).
func (m *Merge) Done(i int) {
	m.keys[i] = key{tag: done<<40 | uint64(i)}
	m.replay(i)
}

// Next returns the stream whose head goes next, and that head (Step); or
// a stream that waits (Wait); or End.
func (m *Merge) Next() (i int, h Head, st Status) {
	w := m.win[1]
	switch m.keys[w].tag >> 40 {
	case ready:
		return int(w), m.heads[w], Step
	case waiting:
		return int(w), Head{}, Wait
	}
	return -1, Head{}, End
}

// Place is told that the caller placed stream i's head, which Next gave,
// at place at (the caller's numbering: a line, an index). It reports a
// clash when that head is a response whose process invokes again at its
// timestamp and another stream's did so at that timestamp already: such a
// group has no honest order (see watch.place), and the Clash names that
// other stream and where its response was placed.
func (m *Merge) Place(i int, at int64) (Clash, bool) {
	return m.watch.place(int32(i), m.heads[i], at)
}

// replay decides again the nodes from leaf i to the root: at each, the
// winner from below against the sibling's. Where a node's winner stays
// what it was and is not leaf i, the nodes above it stay too.
func (m *Merge) replay(i int) {
	w := int32(i)
	kw := m.keys[i]
	for v := m.size + i; v > 1; v >>= 1 {
		if s := m.win[v^1]; m.keys[s].less(kw) {
			w, kw = s, m.keys[s]
		}
		if m.win[v>>1] == w && w != int32(i) {
			return
		}
		m.win[v>>1] = w
	}
}
