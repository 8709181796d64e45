package analyzer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/history"
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
	// LatestWriter is the line of the cas that wrote Latest.
	LatestWriter int64 `json:"latest_writer"`
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
		return int64(h.line[h.accOp[y]])
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
	for s := e.next(y, w); s != none && *budget > 0; s = e.succ[s] {
		j++
		*budget--
		if e.hbBefore(h.accOp[s], i) {
			n, latest = j, s
		}
	}
	return n, latest
}

// staleness lists the outdated observations of operation i.
func (e *eval) staleness(i int32, budget *int) []Staleness {
	h := e.h
	if !e.observer(i) {
		return nil
	}
	var out []Staleness
	for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
		n, s := e.behind(i, x, budget)
		if n == 0 {
			continue
		}
		w := h.wordOf(x)
		st := Staleness{Op: int64(h.line[i]), Word: h.addr[w], Value: h.valueOf(x), Writer: h.writerLine(h.ver[x]),
			Behind: n, Latest: h.nw[s], LatestWriter: h.writerLine(s)}
		verb, obj := "read", "the read"
		if !h.isRead(i) {
			verb, obj = "expected", "it"
		}
		versions := "versions"
		if n == 1 {
			versions = "version"
		}
		from := "its initial value"
		if st.Writer != 0 {
			from = "written by " + h.opName(h.accOp[h.ver[x]])
		}
		sop := h.accOp[s]
		done := fmt.Sprintf("returned at line %d", h.retLine[sop])
		if h.flags[sop]&fReturned == 0 {
			done = "was cut off by a crash after taking effect"
		}
		st.Reason = fmt.Sprintf("%s %s address %d = %s (%s), %d %s behind: %s had written %s there and %s, before %s was invoked",
			h.opName(i), verb, st.Word, history.FormatValue(st.Value), from, n, versions, h.opName(sop), history.FormatValue(st.Latest), done, obj)
		out = append(out, st)
	}
	return out
}

// rfEdge is the reads-from edge into access x of operation v, from its
// version's writer or from genesis.
func (e *eval) rfEdge(v, x int32) (Edge, bool) {
	h := e.h
	y := h.ver[x]
	w := h.wordOf(x)
	verb := "read"
	if !h.isRead(v) {
		verb = "expected"
	}
	switch {
	case y >= 0:
		u := h.accOp[y]
		return Edge{From: int64(h.line[u]), To: int64(h.line[v]), Kind: ReadsFrom, Word: h.addr[w],
			Reason: fmt.Sprintf("%s %s address %d = %s, written by %s", h.opName(v), verb, h.addr[w], history.FormatValue(h.valueOf(x)), h.opName(u))}, true
	case y == verGenesis:
		return Edge{From: 0, To: int64(h.line[v]), Kind: ReadsFrom, Word: h.addr[w],
			Reason: fmt.Sprintf("%s found address %d = %s, its initial value", h.opName(v), h.addr[w], history.FormatValue(h.valueOf(x)))}, true
	}
	return Edge{}, false
}

// witness completes the anomalies: reads-from edges for the kinds other
// than cycles, and the staleness of their observations.
func (e *eval) witness(res *Result) {
	h := e.h
	budget := maxStaleWalk
	for k := range res.Anomalies {
		a := &res.Anomalies[k]
		var w int32 = none
		if len(a.Words) == 1 {
			w = h.lookupWord(a.Words[0])
		}
		ops := make([]int32, 0, len(a.Ops))
		for _, l := range a.Ops {
			if i := h.opOfLine(l); i != none {
				ops = append(ops, i)
			}
		}
		if a.Kind != Cycle && a.Edges == nil && w != none {
			switch a.Kind {
			case Fork, UnreachableWrite:
				// The operations that expected the value, each with its
				// reads-from edge from the value's writer.
				for _, i := range ops {
					x := h.accessAt(i, w)
					if x == none || !e.writer(i) {
						continue
					}
					if ed, ok := e.rfEdge(i, x); ok && !slices.ContainsFunc(a.Edges, func(o Edge) bool { return o.To == ed.To }) {
						a.Edges = append(a.Edges, ed)
					}
				}
			}
		}
		var sentences []string
		seen := map[int32]bool{}
		for _, i := range ops {
			if seen[i] {
				continue
			}
			seen[i] = true
			for _, s := range e.staleness(i, &budget) {
				a.Staleness = append(a.Staleness, s)
				sentences = append(sentences, s.Reason)
			}
		}
		if len(sentences) > 0 {
			a.Explanation += ". Staleness: " + strings.Join(sentences, "; ")
		}
	}
}
