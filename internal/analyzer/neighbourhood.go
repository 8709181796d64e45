package analyzer

import (
	"encoding/json"
	"fmt"
	"slices"
)

// OpInfo describes an operation as the analyzer saw it, for reports. It
// holds no values: the analyzer does not keep them per access (a report
// re-reads the lines it shows, see history.Extract).
type OpInfo struct {
	// Line is the line of the invocation (the operation's identity); 0 is
	// genesis, the initial state.
	Line int64 `json:"line"`
	// RetLine is the line of the response, 0 if none.
	RetLine int64  `json:"ret_line,omitempty"`
	Proc    int32  `json:"proc"`
	Kind    string `json:"kind"` // "read", "cas", "swap", or "genesis"
	// Status: "returned" (a read or a swap), "ok" (a cas), "fail",
	// "crashed" (cut off by a crash) or "pending" (cut off by the end of
	// the history).
	Status string `json:"status"`
	// CrashLine is the crash that cut the operation off, if any.
	CrashLine int64 `json:"crash_line,omitempty"`
	// InGraph: the operation is a vertex of the graph (it responded, or it
	// is a cut-off cas taken to have succeeded: Completed).
	InGraph   bool `json:"in_graph"`
	Completed bool `json:"completed,omitempty"`
	// Desc names it in sentences: "line 12 (process 3 cas)".
	Desc string `json:"desc"`
}

// genesis describes the genesis vertex.
var genesis = OpInfo{Kind: "genesis", Status: "ok", InGraph: true, Desc: "genesis (initial state)"}

func (e *eval) opInfo(i int32, crashLine map[int32]int64) OpInfo {
	h := e.h
	f := h.flags[i]
	o := OpInfo{Line: int64(h.line[i]), RetLine: int64(h.retLineOf(i)), Proc: h.procIDs[h.procOf(i)],
		InGraph: e.effective(i), Completed: f&fCompleted != 0, Desc: h.opName(i)}
	o.Kind = h.kind(i)
	switch {
	case f&fReturned != 0 && f&(fRead|fSwap) != 0:
		o.Status = "returned"
	case f&fOK != 0:
		o.Status = "ok"
	case f&fReturned != 0:
		o.Status = "fail"
	case f&fCrashed != 0:
		o.Status = "crashed"
		o.CrashLine = crashLine[i]
	default:
		o.Status = "pending"
	}
	return o
}

// crashLines maps the cut-off operations among ops to their crash's line.
func (h *hist) crashLines(ops []int32) map[int32]int64 {
	want := map[int32]bool{}
	for _, i := range ops {
		if h.flags[i]&fCrashed != 0 {
			want[i] = true
		}
	}
	m := map[int32]int64{}
	if len(want) == 0 {
		return m
	}
	for _, c := range h.crashed {
		if want[c.op] {
			m[c.op] = int64(c.line)
		}
	}
	return m
}

// FirstOps describes the first n operations (invocation order), for a
// report on a history with nothing to explain.
func (a *Analysis) FirstOps(n int) []OpInfo {
	h := a.e.h
	n = min(n, int(h.n))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	cl := h.crashLines(ids)
	out := make([]OpInfo, n)
	for i := range out {
		out[i] = a.e.opInfo(int32(i), cl)
	}
	return out
}

// NeighbourhoodOptions bound a Neighbourhood; the zero value takes the
// defaults, which every report uses.
type NeighbourhoodOptions struct {
	// maxNodes bounds the graph's vertices: the anomaly's operations and
	// the context around them (default 32).
	maxNodes int
	// window: the timeline shows the operations invoked within window
	// operations of each of the anomaly's operations (default 6).
	window int
	// maxTimeline bounds the timeline's operations (default 400).
	maxTimeline int
}

// NeighbourEdge is an edge of a neighbourhood; Witness marks the edges of
// the anomaly's explanation.
type NeighbourEdge struct {
	Edge
	Witness bool `json:"witness,omitempty"`
}

// MarshalJSON writes the edge's fields and witness (Edge's own
// MarshalJSON would otherwise be promoted and drop it).
func (n NeighbourEdge) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(n.Edge)
	if err != nil || !n.Witness {
		return b, err
	}
	return append(b[:len(b)-1], `,"witness":true}`...), nil
}

// NeighbourCrash is a crash drawn with a neighbourhood.
type NeighbourCrash struct {
	Line int64 `json:"line"`
	// Story: the crash is part of the anomaly's evidence (Anomaly.Crashes).
	Story bool `json:"story,omitempty"`
	// CutOff are the vertices it cut off.
	CutOff []int64 `json:"cut_off,omitempty"`
	// Reads are the vertices that show what recovery left (the reads
	// after it that the evidence cites).
	Reads []int64 `json:"reads,omitempty"`
	// After are the anomaly's operations invoked after it, when it falls
	// between them.
	After []int64 `json:"after,omitempty"`
}

// Neighbourhood is the part of the precedence graph around one anomaly:
// what a person needs to see it, and never the whole history.
type Neighbourhood struct {
	// Index is the anomaly's index in Result.Anomalies.
	Index   int     `json:"index"`
	Anomaly Anomaly `json:"anomaly"`
	// Core are the anomaly's operations (lines; 0 for genesis).
	Core []int64 `json:"core"`
	// Nodes are the graph's vertices: the core, then the evidence (the
	// ends of the witness's edges, the reads after a crash it cites), then
	// context (the writers of the values the core observed, the writes
	// that replaced them, the sources of failures, the versions a stale
	// read missed).
	Nodes []OpInfo `json:"nodes"`
	// Edges are the edges of the multigraph among Nodes, one per reason
	// and word: reads-from, auxiliary, recovery, and happens-before (the
	// real-time order among Nodes, transitively reduced); the witness's
	// edges are all there, marked.
	Edges []NeighbourEdge `json:"edges"`
	// Crashes are the crashes of the anomaly's evidence and those that
	// cut off one of Nodes, in order.
	Crashes []NeighbourCrash `json:"crashes,omitempty"`
	// Timeline are the operations to draw on a timeline: Nodes and the
	// operations invoked around the core, in invocation order.
	Timeline []OpInfo `json:"timeline"`
}

// Neighbourhood returns the neighbourhood of anomaly k of the result.
func (a *Analysis) Neighbourhood(k int, opts NeighbourhoodOptions) (*Neighbourhood, error) {
	if k < 0 || k >= len(a.Result.Anomalies) || k >= len(a.x.findings) {
		return nil, fmt.Errorf("analyzer: no anomaly %d (the result has %d)", k, len(a.Result.Anomalies))
	}
	if opts.maxNodes <= 0 {
		opts.maxNodes = 32
	}
	if opts.window <= 0 {
		opts.window = 6
	}
	if opts.maxTimeline <= 0 {
		opts.maxTimeline = 400
	}
	b := &nbBuilder{x: a.x, e: a.e, h: a.e.h, opts: opts, f: &a.x.findings[k], in: map[int32]bool{}}
	b.nb = &Neighbourhood{Index: k, Anomaly: a.Result.Anomalies[k]}
	b.vertices()
	b.edges()
	b.hbEdges()
	b.crashes()
	b.timeline()
	return b.nb, nil
}

// gen stands for genesis among a neighbourhood's vertices (none is -1;
// -2 is no operation).
const gen = int32(-2)

// nbBuilder gathers a Neighbourhood.
type nbBuilder struct {
	x     *explainer
	e     *eval
	h     *hist
	opts  NeighbourhoodOptions
	f     *finding
	nb    *Neighbourhood
	nodes []int32 // operations and gen
	ops   []int32 // nodes without gen
	in    map[int32]bool
	// connected: node pairs joined by an edge other than happens-before.
	connected map[[2]int32]bool
}

// add makes i a vertex: always when forced (the anomaly's own and its
// evidence), else while there is room and i is in the graph.
func (b *nbBuilder) add(i int32, force bool) {
	if i == none || b.in[i] || (!force && len(b.nodes) >= b.opts.maxNodes) {
		return
	}
	if i != gen && !b.e.effective(i) && !force {
		return
	}
	b.in[i] = true
	b.nodes = append(b.nodes, i)
}

// vertices picks the core (the anomaly's operations and its witness
// edges' ends), the evidence (the reads after a crash it cites, the
// operations that observed a cut-off cas), then the context around it:
// the writers of the values the core observed, the writes that replaced
// them, the sources of failures, and the versions a stale observation
// missed (a few per word).
func (b *nbBuilder) vertices() {
	e, h, f := b.e, b.h, b.f
	for _, i := range f.ops {
		b.nb.Core = append(b.nb.Core, b.x.line(i))
		b.add(i, true)
	}
	for _, ed := range f.edges {
		b.add(ed.from, true)
		b.add(ed.to, true)
	}
	for _, n := range f.notes {
		for _, v := range n.vals {
			b.add(h.opOf(v.acc), true)
		}
		if n.kind == EvidenceCutOff {
			obs, _ := b.x.firstObserver(n.op)
			b.add(obs, false)
		}
		if n.kind == EvidenceElsewhere {
			b.add(h.opOf(n.writerAcc), false)
		}
		b.add(n.replacer, false)
		b.add(n.readBy, false)
	}
	for _, i := range f.ops {
		for a := int32(h.acc[i]); a < int32(h.acc[i+1]); a++ {
			y, w := h.ver[a], h.wordOf(a)
			switch {
			case e.observer(i):
				b.add(b.x.vertexOf(y), false)
				if h.reader(i) {
					if s := e.next(y, w); s != none {
						b.add(h.opOf(s), false)
					}
				}
			case h.failed(i) && h.word[a]&blamed != 0:
				b.add(b.x.vertexOf(y), false)
				if src, _ := e.failureSource(i, a); src != none {
					b.add(h.opOf(src), false)
				}
			}
			if e.writer(i) && e.succOf(a) != none {
				b.add(h.opOf(e.succOf(a)), false)
			}
		}
	}
	for _, st := range f.stale {
		w := h.wordOf(st.x)
		for s, j := e.next(h.ver[st.x], w), 0; s != none && j < st.n && j < 6; s, j = e.succOf(s), j+1 {
			b.add(h.opOf(s), false)
		}
	}
	for _, i := range b.nodes {
		if i != gen {
			b.ops = append(b.ops, i)
		}
	}
}

// witness reports whether ed is an edge of the anomaly's explanation.
func (b *nbBuilder) witness(ed fact) bool {
	return slices.ContainsFunc(b.f.edges, func(o fact) bool {
		return o.from == ed.from && o.to == ed.to && o.kind == ed.kind && o.x == ed.x
	})
}

// edges adds the edges among the vertices other than happens-before.
func (b *nbBuilder) edges() {
	b.connected = map[[2]int32]bool{}
	for _, u := range b.nodes {
		for _, v := range b.nodes {
			if u == v || v == gen {
				continue
			}
			for _, ed := range b.e.edgeFacts(u, v, false) {
				b.nb.Edges = append(b.nb.Edges, NeighbourEdge{Edge: b.x.edge(ed), Witness: b.witness(ed)})
				b.connected[[2]int32{u, v}] = true
			}
		}
	}
}

// hbEdges adds happens-before, transitively reduced among the vertices,
// and the witness's happens-before edges always.
func (b *nbBuilder) hbEdges() {
	e := b.e
	for _, u := range b.ops {
		for _, v := range b.ops {
			if !e.hbBefore(u, v) {
				continue
			}
			ed := e.hbFact(u, v)
			wit := b.witness(ed)
			if !wit {
				if b.connected[[2]int32{u, v}] {
					continue
				}
				implied := slices.ContainsFunc(b.ops, func(m int32) bool {
					return m != u && m != v && e.hbBefore(u, m) && e.hbBefore(m, v)
				})
				if implied {
					continue
				}
			}
			b.nb.Edges = append(b.nb.Edges, NeighbourEdge{Edge: b.x.edge(ed), Witness: wit})
		}
	}
	// Witness edges the search above cannot see (none expected; kept so
	// the explanation is always drawn whole).
	for _, ed := range b.f.edges {
		e := b.x.edge(ed)
		if !slices.ContainsFunc(b.nb.Edges, func(o NeighbourEdge) bool {
			return o.Witness && o.From == e.From && o.To == e.To && o.Kind == e.Kind
		}) {
			b.nb.Edges = append(b.nb.Edges, NeighbourEdge{Edge: e, Witness: true})
		}
	}
}

// crashes lists the crashes of the anomaly's evidence and those that cut
// off a vertex.
func (b *nbBuilder) crashes() {
	h, f := b.h, b.f
	idx := slices.Clone(f.crashes)
	for _, i := range b.ops {
		if c := h.crashOf(i); c != none && !slices.Contains(idx, c) {
			idx = append(idx, c)
		}
	}
	slices.Sort(idx)
	for _, c := range idx {
		nc := NeighbourCrash{Line: int64(h.crashLine[c]), Story: slices.Contains(f.crashes, c)}
		for _, i := range b.ops {
			if h.crashOf(i) == c {
				nc.CutOff = append(nc.CutOff, b.x.line(i))
			}
		}
		for _, n := range f.notes {
			if n.crash != c {
				continue
			}
			for _, v := range n.vals {
				if r := b.x.line(h.opOf(v.acc)); !slices.Contains(nc.Reads, r) {
					nc.Reads = append(nc.Reads, r)
				}
			}
			if n.kind == EvidenceCrash {
				nc.After = b.x.lines(n.after)
			}
		}
		b.nb.Crashes = append(b.nb.Crashes, nc)
	}
}

// timeline lists the vertices and the operations invoked near the core,
// in invocation order, and describes the nodes.
func (b *nbBuilder) timeline() {
	e, h := b.e, b.h
	tl := map[int32]bool{}
	for _, i := range b.ops {
		tl[i] = true
	}
	for d := 1; d <= b.opts.window && len(tl) < b.opts.maxTimeline; d++ {
		for _, i := range b.f.ops {
			for _, j := range []int32{i - int32(d), i + int32(d)} {
				if j >= 0 && j < h.n && len(tl) < b.opts.maxTimeline {
					tl[j] = true
				}
			}
		}
	}
	tlOps := make([]int32, 0, len(tl))
	for i := range tl {
		tlOps = append(tlOps, i)
	}
	slices.Sort(tlOps)
	cl := h.crashLines(tlOps)
	for _, i := range tlOps {
		b.nb.Timeline = append(b.nb.Timeline, e.opInfo(i, cl))
	}
	for _, i := range b.nodes {
		if i == gen {
			b.nb.Nodes = append(b.nb.Nodes, genesis)
		} else {
			b.nb.Nodes = append(b.nb.Nodes, e.opInfo(i, cl))
		}
	}
}
