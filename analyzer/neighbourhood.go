package analyzer

import (
	"fmt"
	"slices"

	"github.com/pmlin/pmlin/history"
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
	Kind    string `json:"kind"` // "read", "cas", or "genesis"
	// Status: "returned" (a read), "ok", "fail", "crashed" (cut off by a
	// crash) or "pending" (cut off by the end of the history).
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
	o := OpInfo{Line: int64(h.line[i]), RetLine: int64(h.retLine[i]), Proc: h.procIDs[h.proc[i]],
		InGraph: e.effective(i), Completed: f&fCompleted != 0, Desc: h.opName(i)}
	o.Kind = "cas"
	if f&fRead != 0 {
		o.Kind = "read"
	}
	switch {
	case f&(fRead|fReturned) == fRead|fReturned:
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

// NeighbourhoodOptions bound a Neighbourhood.
type NeighbourhoodOptions struct {
	// MaxNodes bounds the graph's vertices: the anomaly's operations and
	// the context around them (default 32).
	MaxNodes int
	// Window: the timeline shows the operations invoked within Window
	// operations of each of the anomaly's operations (default 6).
	Window int
	// MaxTimeline bounds the timeline's operations (default 400).
	MaxTimeline int
}

// NeighbourEdge is an edge of a neighbourhood; Witness marks the edges of
// the anomaly's explanation.
type NeighbourEdge struct {
	Edge
	Witness bool `json:"witness,omitempty"`
}

// Neighbourhood is the part of the precedence graph around one anomaly:
// what a person needs to see it, and never the whole history.
type Neighbourhood struct {
	// Index is the anomaly's index in Result.Anomalies.
	Index   int     `json:"index"`
	Anomaly Anomaly `json:"anomaly"`
	// Core are the anomaly's operations (lines; 0 for genesis).
	Core []int64 `json:"core"`
	// Nodes are the graph's vertices: the core, then context (the writers
	// of the values the core observed, the writes that replaced them,
	// the sources of failures, the versions a stale read missed).
	Nodes []OpInfo `json:"nodes"`
	// Edges are the edges of the multigraph among Nodes, one per reason
	// and word: reads-from, auxiliary, recovery, and happens-before (the
	// real-time order among Nodes, transitively reduced); the witness's
	// edges are all there, marked.
	Edges []NeighbourEdge `json:"edges"`
	// Timeline are the operations to draw on a timeline: Nodes and the
	// operations invoked around the core, in invocation order.
	Timeline []OpInfo `json:"timeline"`
}

// Neighbourhood returns the neighbourhood of anomaly k of the result.
func (a *Analysis) Neighbourhood(k int, opts NeighbourhoodOptions) (*Neighbourhood, error) {
	if k < 0 || k >= len(a.Result.Anomalies) {
		return nil, fmt.Errorf("analyzer: no anomaly %d (the result has %d)", k, len(a.Result.Anomalies))
	}
	if opts.MaxNodes <= 0 {
		opts.MaxNodes = 32
	}
	if opts.Window <= 0 {
		opts.Window = 6
	}
	if opts.MaxTimeline <= 0 {
		opts.MaxTimeline = 400
	}
	b := &nbBuilder{e: a.e, h: a.e.h, opts: opts, an: a.Result.Anomalies[k], in: map[int32]bool{}}
	b.nb = &Neighbourhood{Index: k, Anomaly: b.an}
	b.vertices()
	b.crashed = map[int32]crashRec{}
	for _, c := range b.h.crashed {
		if b.in[c.op] {
			b.crashed[c.op] = c
		}
	}
	b.edges()
	b.hbEdges()
	b.timeline()
	return b.nb, nil
}

// gen stands for genesis among a neighbourhood's vertices (none is -1;
// -2 is no operation).
const gen = int32(-2)

// nbBuilder gathers a Neighbourhood.
type nbBuilder struct {
	e       *eval
	h       *hist
	opts    NeighbourhoodOptions
	an      Anomaly
	nb      *Neighbourhood
	core    []int32
	nodes   []int32 // operations and gen
	ops     []int32 // nodes without gen
	in      map[int32]bool
	crashed map[int32]crashRec // the nodes cut off by a crash
	// connected: node pairs joined by an edge other than happens-before.
	connected map[[2]int32]bool
}

// add makes i a vertex: always when forced (the anomaly's own), else
// while there is room and i is in the graph.
func (b *nbBuilder) add(i int32, force bool) {
	if i == none || b.in[i] || (!force && len(b.nodes) >= b.opts.MaxNodes) {
		return
	}
	if i != gen && !b.e.effective(i) && !force {
		return
	}
	b.in[i] = true
	b.nodes = append(b.nodes, i)
}

// version is the vertex of version y: its writer, gen, or none.
func (b *nbBuilder) version(y int32) int32 {
	switch {
	case y >= 0:
		return b.h.accOp[y]
	case y == verGenesis:
		return gen
	}
	return none
}

// vertices picks the core (the anomaly's operations and its witness
// edges' ends), then the context around it: the writers of the values the
// core observed, the writes that replaced them, the sources of failures,
// and the versions a stale observation missed (a few per word).
func (b *nbBuilder) vertices() {
	e, h := b.e, b.h
	for _, l := range b.an.Ops {
		if i := h.opOfLine(l); i != none {
			b.core = append(b.core, i)
			b.nb.Core = append(b.nb.Core, l)
			b.add(i, true)
		}
	}
	for _, ed := range b.an.Edges {
		if ed.From == 0 {
			b.add(gen, true)
		} else {
			b.add(h.opOfLine(ed.From), true)
		}
		b.add(h.opOfLine(ed.To), true)
	}
	for _, i := range b.core {
		for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
			y, w := h.ver[x], h.wordOf(x)
			switch {
			case e.observer(i):
				b.add(b.version(y), false)
				if h.isRead(i) {
					if s := e.next(y, w); s != none {
						b.add(h.accOp[s], false)
					}
				}
			case h.failed(i) && h.word[x]&blamed != 0:
				b.add(b.version(y), false)
				if src, _ := e.failureSource(i, x); src != none {
					b.add(h.accOp[src], false)
				}
			}
			if e.writer(i) && e.succ[x] != none {
				b.add(h.accOp[e.succ[x]], false)
			}
		}
	}
	for _, st := range b.an.Staleness {
		i, w := h.opOfLine(st.Op), h.lookupWord(st.Word)
		if i == none || w == none {
			continue
		}
		x := h.accessAt(i, w)
		if x == none {
			continue
		}
		for s, j := e.next(h.ver[x], w), 0; s != none && j < st.Behind && j < 6; s, j = e.succ[s], j+1 {
			b.add(h.accOp[s], false)
		}
	}
	for _, i := range b.nodes {
		if i != gen {
			b.ops = append(b.ops, i)
		}
	}
}

// witness reports whether ed is an edge of the anomaly's explanation.
func (b *nbBuilder) witness(ed Edge) bool {
	for _, o := range b.an.Edges {
		if o.From == ed.From && o.To == ed.To && o.Kind == ed.Kind && (o.Word == ed.Word || o.Kind == HappensBefore || o.Kind == Recovery) {
			return true
		}
	}
	return false
}

// edges adds the edges among the vertices other than happens-before.
func (b *nbBuilder) edges() {
	b.connected = map[[2]int32]bool{}
	for _, u := range b.nodes {
		for _, v := range b.nodes {
			if u == v || v == gen {
				continue
			}
			for _, ed := range b.e.reasons(u, v, b.crashed) {
				b.nb.Edges = append(b.nb.Edges, NeighbourEdge{Edge: ed, Witness: b.witness(ed)})
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
			ed := e.hbEdge(u, v, b.crashed)
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
			b.nb.Edges = append(b.nb.Edges, NeighbourEdge{Edge: ed, Witness: wit})
		}
	}
	// Witness edges the search above cannot see (none expected; kept so
	// the explanation is always drawn whole).
	for _, ed := range b.an.Edges {
		if !slices.ContainsFunc(b.nb.Edges, func(o NeighbourEdge) bool {
			return o.Witness && o.From == ed.From && o.To == ed.To && o.Kind == ed.Kind
		}) {
			b.nb.Edges = append(b.nb.Edges, NeighbourEdge{Edge: ed, Witness: true})
		}
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
	for d := 1; d <= b.opts.Window && len(tl) < b.opts.MaxTimeline; d++ {
		for _, i := range b.core {
			for _, j := range []int32{i - int32(d), i + int32(d)} {
				if j >= 0 && j < h.n && len(tl) < b.opts.MaxTimeline {
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

// reasons lists the edges from u to v other than happens-before, one per
// reason and word (u may be genesis, gen).
func (e *eval) reasons(u, v int32, crashed map[int32]crashRec) []Edge {
	h := e.h
	var out []Edge
	if e.observer(v) {
		for x := int32(h.acc[v]); x < int32(h.acc[v+1]); x++ {
			y := h.ver[x]
			if (u == gen && y == verGenesis) || (u != gen && y >= 0 && h.accOp[y] == u) {
				if ed, ok := e.rfEdge(v, x); ok {
					out = append(out, ed)
				}
			}
		}
	}
	if u == gen {
		return out
	}
	if h.flags[u]&(fRead|fReturned) == fRead|fReturned {
		for x := int32(h.acc[u]); x < int32(h.acc[u+1]); x++ {
			if s := e.next(h.ver[x], h.wordOf(x)); s != none && h.accOp[s] == v {
				w := h.wordOf(x)
				out = append(out, Edge{From: int64(h.line[u]), To: int64(h.line[v]), Kind: Auxiliary, Word: h.addr[w],
					Reason: fmt.Sprintf("%s read address %d = %s, which %s replaced, so the read came first", h.opName(u), h.addr[w], history.FormatValue(h.valueOf(x)), h.opName(v))})
			}
		}
	}
	if h.failed(v) && (h.flags[v]&fNoAux == 0 || e.assumeFail) {
		x := h.blamedAccess(v)
		if src, _ := e.failureSource(v, x); src != none && h.accOp[src] == u {
			w := h.wordOf(x)
			out = append(out, Edge{From: int64(h.line[u]), To: int64(h.line[v]), Kind: Auxiliary, Word: h.addr[w],
				Reason: fmt.Sprintf("%s failed at address %d expecting %s, so it needs a write that replaced that value there; %s is that write", h.opName(v), h.addr[w], history.FormatValue(h.valueOf(x)), h.opName(u))})
		}
	}
	if c, ok := crashed[u]; ok && e.mode == history.Recoverable && h.flags[u]&fCompleted != 0 {
		if reason, ok := e.recoveryReason(c, v); ok {
			out = append(out, Edge{From: int64(h.line[u]), To: int64(h.line[v]), Kind: Recovery, Reason: reason})
		}
	}
	return out
}

// hbEdge is the happens-before edge u -> v with its reason.
func (e *eval) hbEdge(u, v int32, crashed map[int32]crashRec) Edge {
	h := e.h
	ed := Edge{From: int64(h.line[u]), To: int64(h.line[v]), Kind: HappensBefore}
	if h.flags[u]&fReturned != 0 {
		ed.Reason = fmt.Sprintf("%s returned at line %d, before %s was invoked", h.opName(u), h.retLine[u], h.opName(v))
		return ed
	}
	ed.Reason = fmt.Sprintf("%s was cut off by the crash at line %d and took effect before it (strict), so before %s was invoked", h.opName(u), crashed[u].line, h.opName(v))
	return ed
}
