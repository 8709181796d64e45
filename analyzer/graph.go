package analyzer

import (
	"fmt"
	"slices"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/encoding"
)

// Graph is the precedence multigraph of an Analysis seen through gonum's
// graph.Directed interface, so gonum's algorithms (strongly connected
// components, DOT encoding, paths) run on it directly, without a second
// copy of the graph. Node 0 is genesis; operation i (invocation order) is
// node i+1. Parallel edges of different kinds between two operations
// appear once, as an Edge that names its strongest reason.
//
// The analyzer itself does not go through this interface: its hot loops
// run on the arrays, where an interface call and an iterator allocation per
// edge would cost more than the whole check.
type Graph struct {
	e *eval
}

// Graph returns the graph the verdict was reached on.
func (a *Analysis) Graph() *Graph { return &Graph{a.e} }

// Node is a vertex of a Graph: genesis or an operation.
type Node struct {
	id   int64
	Line int64 // the operation's invocation line; 0 for genesis
	Desc string
}

// ID implements graph.Node.
func (n Node) ID() int64 { return n.id }

// DOTID names the node in DOT output: "genesis" or "L<line>".
func (n Node) DOTID() string {
	if n.id == 0 {
		return "genesis"
	}
	return fmt.Sprintf("L%d", n.Line)
}

// Attributes label the node in DOT output.
func (n Node) Attributes() []encoding.Attribute {
	return []encoding.Attribute{{Key: "label", Value: fmt.Sprintf("%q", n.Desc)}}
}

// GraphEdge is an edge of a Graph, with the reason it exists.
type GraphEdge struct {
	F, T Node
	Edge
}

// From implements graph.Edge.
func (e GraphEdge) From() graph.Node { return e.F }

// To implements graph.Edge.
func (e GraphEdge) To() graph.Node { return e.T }

// ReversedEdge implements graph.Edge: edges of a precedence graph have no
// meaningful reversal, so it returns the edge itself.
func (e GraphEdge) ReversedEdge() graph.Edge { return e }

// Attributes label the edge in DOT output by kind and word.
func (e GraphEdge) Attributes() []encoding.Attribute {
	label := string(e.Kind)
	if e.Kind == ReadsFrom || e.Kind == Auxiliary {
		label = fmt.Sprintf("%s @%d", e.Kind, e.Word)
	}
	return []encoding.Attribute{{Key: "label", Value: fmt.Sprintf("%q", label)}}
}

func (g *Graph) valid(id int64) bool {
	if id == 0 {
		return true
	}
	return id > 0 && id <= int64(g.e.h.n) && g.e.effective(int32(id-1))
}

// Node implements graph.Graph.
func (g *Graph) Node(id int64) graph.Node {
	if !g.valid(id) {
		return nil
	}
	return g.node(id)
}

func (g *Graph) node(id int64) Node {
	if id == 0 {
		return Node{id: 0, Desc: "genesis (initial state)"}
	}
	i := int32(id - 1)
	return Node{id: id, Line: int64(g.e.h.line[i]), Desc: g.e.h.opName(i)}
}

// Nodes implements graph.Graph: genesis and every operation in the graph.
func (g *Graph) Nodes() graph.Nodes {
	ids := []int64{0}
	for i := int32(0); i < g.e.h.n; i++ {
		if g.e.effective(i) {
			ids = append(ids, int64(i)+1)
		}
	}
	return &nodeIter{g: g, ids: ids, pos: -1}
}

// From implements graph.Graph. For genesis it scans every access: O(n·k).
func (g *Graph) From(id int64) graph.Nodes {
	if !g.valid(id) {
		return graph.Empty
	}
	return &nodeIter{g: g, ids: g.targets(id), pos: -1}
}

func (g *Graph) targets(id int64) []int64 {
	e, h := g.e, g.e.h
	var ids []int64
	if id == 0 {
		for i := int32(0); i < h.n; i++ {
			if !e.observer(i) {
				continue
			}
			for x := int32(h.acc[i]); x < int32(h.acc[i+1]); x++ {
				if h.ver[x] == verGenesis {
					ids = append(ids, int64(i)+1)
					break
				}
			}
		}
		return ids
	}
	u := int32(id - 1)
	d := e.degree(u)
	for k := int32(0); k < d; k++ {
		if t := e.edgeAt(u, k); t != none && e.effective(t) {
			ids = append(ids, int64(t)+1)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// To implements graph.Directed. It scans the whole graph: O(n + m).
func (g *Graph) To(id int64) graph.Nodes {
	if !g.valid(id) {
		return graph.Empty
	}
	var ids []int64
	it := g.Nodes()
	for it.Next() {
		u := it.Node().ID()
		if g.HasEdgeFromTo(u, id) {
			ids = append(ids, u)
		}
	}
	return &nodeIter{g: g, ids: ids, pos: -1}
}

// HasEdgeFromTo implements graph.Directed.
func (g *Graph) HasEdgeFromTo(uid, vid int64) bool {
	if !g.valid(uid) || !g.valid(vid) || vid == 0 {
		return false
	}
	_, ok := slices.BinarySearch(g.targets(uid), vid)
	return ok
}

// HasEdgeBetween implements graph.Graph.
func (g *Graph) HasEdgeBetween(xid, yid int64) bool {
	return g.HasEdgeFromTo(xid, yid) || g.HasEdgeFromTo(yid, xid)
}

// Edge implements graph.Graph: the edge from u to v with its reason, or nil.
func (g *Graph) Edge(uid, vid int64) graph.Edge {
	if !g.HasEdgeFromTo(uid, vid) {
		return nil
	}
	return g.edge(uid, vid)
}

func (g *Graph) edge(uid, vid int64) GraphEdge {
	e, h := g.e, g.e.h
	ge := GraphEdge{F: g.node(uid), T: g.node(vid)}
	v := int32(vid - 1)
	if uid == 0 {
		for x := int32(h.acc[v]); x < int32(h.acc[v+1]); x++ {
			if h.ver[x] == verGenesis {
				w := h.wordOf(x)
				ge.Edge = Edge{From: 0, To: int64(h.line[v]), Kind: ReadsFrom, Word: h.addr[w],
					Reason: fmt.Sprintf("%s found address %d = %s, its initial value", h.opName(v), h.addr[w], hex(h.valueOf(x)))}
				break
			}
		}
		return ge
	}
	ge.Edge = e.why(int32(uid-1), v)
	return ge
}

// nodeIter iterates over node ids of a Graph.
type nodeIter struct {
	g   *Graph
	ids []int64
	pos int
}

func (it *nodeIter) Next() bool {
	if it.pos+1 >= len(it.ids) {
		it.pos = len(it.ids)
		return false
	}
	it.pos++
	return true
}

func (it *nodeIter) Len() int {
	if it.pos >= len(it.ids) {
		return 0
	}
	return len(it.ids) - it.pos - 1
}

func (it *nodeIter) Reset() { it.pos = -1 }

func (it *nodeIter) Node() graph.Node {
	if it.pos < 0 || it.pos >= len(it.ids) {
		return nil
	}
	return it.g.node(it.ids[it.pos])
}

var _ graph.Directed = (*Graph)(nil)
