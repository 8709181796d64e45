package analyzer

import (
	"slices"
)

// Minimal witnesses.
//
// An anomaly is explained by the few operations and edges that conflict: a
// cycle by a shortest cycle of its strongly connected component (see
// shortestCycle), each edge with its reason; a fork, an unreachable write
// or an unexplained failure by the reads-from edges its sentence mentions.
// On top of that, every read (or successful cas) of an anomaly that
// observed an outdated value gets a staleness figure.

// Staleness says how far behind an operation's observation of a word was:
// the multi-word analogue of the quasi factor of Round-Up (Zhang et al.,
// ASE 2013, which measures how far a quasi-linearizable queue strays).
//
// Definition: let v be the value the operation read (or, for a cas,
// expected) at Word, and v = p0, p1, ..., pm the versions after v on that
// word's reads-from path (p(j+1) is the successful cas that replaced p(j)).
// Behind is the largest j >= 1 such that the writer of p(j)
// happens-before the operation (it responded, or in strict mode was cut
// off by a crash and took effect, before the operation was invoked): the
// operation missed j versions that were certainly in place before it
// started. Latest is the value p(j) and LatestWriter its writer. An
// observation that is not behind (Behind 0) is not listed. A value that is
// not on its word's path (dangling, or written by a fork's loser) has no
// staleness.
type Staleness struct {
	Op   int64  `json:"op"`
	Word uint64 `json:"word"`
	// Value is what Op observed and Writer the line of the operation that
	// wrote it (0: the word's initial value).
	Value  uint64 `json:"value"`
	Writer int64  `json:"writer"`
	Behind int    `json:"behind"`
	Latest uint64 `json:"latest"`
	// LatestWriter is the line of the cas that wrote Latest, and
	// LatestRetLine the line of its response (0: a crash cut it off).
	LatestWriter  int64 `json:"latest_writer"`
	LatestRetLine int64 `json:"latest_ret_line,omitempty"`
	// Reason says it in a sentence.
	Reason string `json:"reason"`
}

// maxStaleWalk bounds the steps along words' paths when measuring the
// staleness of one result's anomalies (a hot word of a long history has
// millions of versions): past it, a figure is the one found so far, a
// lower bound.
const maxStaleWalk = 1 << 25

// opOfLine is the operation invoked at line, or none.
func (h *hist) opOfLine(line int64) int32 {
	if line <= 0 || line > maxLine {
		return none
	}
	i, ok := slices.BinarySearch(h.line, uint32(line))
	if !ok {
		return none
	}
	return int32(i)
}

// lookupWord is the word id of address a, or none.
func (h *hist) lookupWord(a uint64) int32 {
	if a < uint64(len(h.direct)) {
		return h.direct[a] - 1
	}
	if w, ok := h.wordID[a]; ok {
		return w
	}
	return none
}

// accessAt is op i's access to word w, or none.
func (h *hist) accessAt(i, w int32) int32 {
	for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
		if h.wordOf(x) == w {
			return x
		}
	}
	return none
}

// hbBefore reports whether a happens-before b in the evaluation: a is in
// the graph and responded (or, cut off and completed in strict mode, is
// placed just before its crash) before b was invoked.
func (e *eval) hbBefore(a, b int32) bool {
	return a != b && e.effective(a) && e.h.lo[a] <= b
}

// writerLine is the line of the operation that wrote version y (0 for
// genesis).
func (h *hist) writerLine(y int32) int64 {
	if y >= 0 {
		return int64(h.line[h.opOf(y)])
	}
	return 0
}

// onPath reports whether version y (an access or genesis) is on its word's
// reads-from path.
func (e *eval) onPath(y int32) bool {
	return y == verGenesis || (y >= 0 && bit(e.mark, y))
}

// behind measures the staleness of access x of operation i (see
// Staleness): how many versions of its word after the one it observed
// were written by operations that happen-before i, and the last of them.
func (e *eval) behind(i, x int32, budget *int) (n int, latest int32) {
	h := e.h
	y := h.ver[x]
	if !e.onPath(y) {
		return 0, none
	}
	w := h.wordOf(x)
	j := 0
	latest = none
	for s := e.next(y, w); s != none && *budget > 0; s = e.succOf(s) {
		j++
		*budget--
		if e.hbBefore(h.writerOp(s), i) {
			n, latest = j, s
		}
	}
	return n, latest
}

// staleFact is a stale observation in internal ids: access x of
// operation op, n versions behind, the newest missed being access latest.
type staleFact struct {
	op, x  int32
	n      int
	latest int32
}

// staleness lists the outdated observations of operation i.
func (e *eval) staleness(i int32, budget *int) []staleFact {
	h := e.h
	if !e.observer(i) {
		return nil
	}
	var out []staleFact
	for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
		if n, s := e.behind(i, x, budget); n > 0 {
			out = append(out, staleFact{op: i, x: x, n: n, latest: s})
		}
	}
	return out
}

// stalenessOf turns a stale observation into data and its sentence.
func (x *explainer) stalenessOf(f staleFact) Staleness {
	h := x.h
	st := Staleness{Op: int64(h.line[f.op]), Word: h.addr[h.wordOf(f.x)], Value: h.valueOf(f.x), Writer: h.writerLine(h.ver[f.x]),
		Behind: f.n, Latest: h.newVal(f.latest), LatestWriter: h.writerLine(f.latest), LatestRetLine: int64(h.retLineOf(h.opOf(f.latest)))}
	st.Reason = x.r.staleness(st, h.observeRule(f.op), h.isRead(f.op))
	return st
}

// witness completes the findings: the reads-from edges of the kinds other
// than cycles, the staleness of their observations, and their evidence.
func (x *explainer) witness() {
	e, h := x.e, x.h
	budget := maxStaleWalk
	for k := range x.findings {
		f := &x.findings[k]
		if f.kind == Fork || f.kind == UnreachableWrite {
			// The operations that expected the value, each with its
			// reads-from edge from the value's writer.
			w := f.words[0]
			for _, i := range f.ops {
				a := h.accessAt(i, w)
				if a == none || !e.writer(i) || x.vertexOf(h.ver[a]) == none {
					continue
				}
				for _, ed := range e.edgeFacts(x.vertexOf(h.ver[a]), i, false) {
					if ed.kind == ReadsFrom && ed.x == a && !slices.ContainsFunc(f.edges, func(o fact) bool { return o.to == i }) {
						f.edges = append(f.edges, ed)
					}
				}
			}
		}
		seen := map[int32]bool{}
		for _, i := range f.ops {
			if !seen[i] {
				seen[i] = true
				f.stale = append(f.stale, e.staleness(i, &budget)...)
			}
		}
	}
	x.evidence()
}

// vertexOf is the vertex that wrote version y: its operation, gen for the
// initial value, none for a value nobody wrote.
func (x *explainer) vertexOf(y int32) int32 {
	switch {
	case y >= 0:
		return x.h.opOf(y)
	case y == verGenesis:
		return gen
	}
	return none
}
