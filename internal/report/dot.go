package report

import (
	"fmt"
	"io"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/multi"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
)

// dotNode is a vertex of the DOT drawing: an operation, by its line, or
// a crash, by the negated line of its crash.
type dotNode struct {
	line  int64
	attrs []encoding.Attribute
}

func (n dotNode) ID() int64 { return n.line }

func (n dotNode) DOTID() string {
	switch {
	case n.line == 0:
		return "genesis"
	case n.line < 0:
		return fmt.Sprintf("crash%d", -n.line)
	}
	return fmt.Sprintf("L%d", n.line)
}

func (n dotNode) Attributes() []encoding.Attribute { return n.attrs }

// dotLine is one edge of the multigraph: one reason at one word.
type dotLine struct {
	f, t  dotNode
	id    int64
	attrs []encoding.Attribute
}

func (l dotLine) From() graph.Node                 { return l.f }
func (l dotLine) To() graph.Node                   { return l.t }
func (l dotLine) ReversedLine() graph.Line         { l.f, l.t = l.t, l.f; return l }
func (l dotLine) ID() int64                        { return l.id }
func (l dotLine) Attributes() []encoding.Attribute { return l.attrs }

// dotGraph adds a name and graph attributes to gonum's multigraph.
type dotGraph struct {
	*multi.DirectedGraph
	name  string
	label string
}

func (g dotGraph) DOTID() string { return g.name }

func (g dotGraph) DOTAttributers() (gr, node, edge encoding.Attributer) {
	ga := encoding.Attributes{{Key: "labelloc", Value: "t"}, {Key: "label", Value: g.label}}
	na := encoding.Attributes{{Key: "shape", Value: "box"}, {Key: "style", Value: "rounded"}, {Key: "fontname", Value: "Helvetica"}, {Key: "fontsize", Value: "10"}}
	ea := encoding.Attributes{{Key: "fontname", Value: "Helvetica"}, {Key: "fontsize", Value: "9"}}
	return &ga, &na, &ea
}

// edgeColor is the colour of an edge kind, in DOT and HTML.
func edgeColor(k analyzer.EdgeKind) string {
	switch k {
	case analyzer.ReadsFrom:
		return "#1f6fd1"
	case analyzer.Auxiliary:
		return "#e07b00"
	case analyzer.Recovery:
		return "#8a3ccf"
	case "crash":
		return crashColor
	}
	return "#444444"
}

// edgeLabel names an edge by kind, word and value: "rf @7=0x100001",
// "aux @3=0", "hb".
func edgeLabel(e analyzer.Edge) string {
	if e.Kind == analyzer.ReadsFrom || e.Kind == analyzer.Auxiliary {
		return fmt.Sprintf("%s @%d=%s", e.Kind, e.Word, history.FormatValue(e.Value))
	}
	return string(e.Kind)
}

// crashColor is the colour of crashes, in DOT and HTML.
const crashColor = "#d93025"

// DOT writes the neighbourhoods of the anomalies d holds as one Graphviz
// digraph (gonum's DOT encoding of a multigraph): a vertex per operation,
// labelled with its line, process, kind and values; an edge per reason
// and word, labelled by kind, word and value, its reason as tooltip; a red
// octagon per crash, joined to the operations it cut off, to the reads
// after it that the evidence cites and to the anomaly's operations after
// it (anomalies that share a crash share its vertex). The anomalies'
// operations are filled, and the edges of their witnesses drawn bold. A
// linearizable history gives a graph with no vertices.
func DOT(w io.Writer, d *Data) error {
	g := dotGraph{DirectedGraph: multi.NewDirectedGraph(), name: "pmlin"}
	verdict := "linearizable"
	if !d.Result.Linearizable {
		verdict = fmt.Sprintf("NOT linearizable, %d anomalies", len(d.Result.Anomalies)+int(d.Result.Omitted))
	}
	g.label = fmt.Sprintf("%s: %s (%s mode); neighbourhoods of the first %d", d.Name, verdict, d.Result.Mode, len(d.Neighbourhoods))
	if len(d.Neighbourhoods) == 0 {
		g.label = fmt.Sprintf("%s: %s (%s mode)", d.Name, verdict, d.Result.Mode)
	}
	core := map[int64][]int{} // line -> anomalies (1-based) it belongs to
	for _, nb := range d.Neighbourhoods {
		for _, l := range nb.Core {
			core[l] = append(core[l], nb.Index+1)
		}
	}
	nodes := map[int64]dotNode{}
	for _, nb := range d.Neighbourhoods {
		for _, o := range nb.Nodes {
			if _, ok := nodes[o.Line]; ok {
				continue
			}
			label := o.Desc
			if op := d.Ops[o.Line]; op != nil {
				inv, ret := op.Lines()
				label += "\n" + inv
				if ret != "" {
					label += "\n" + ret
				} else {
					label += "\n(" + cutOffText(o) + ")"
				}
			}
			attrs := []encoding.Attribute{{Key: "label", Value: label}}
			if as := core[o.Line]; len(as) > 0 {
				attrs = append(attrs, encoding.Attribute{Key: "style", Value: "rounded,filled,bold"},
					encoding.Attribute{Key: "fillcolor", Value: "#ffd6a5"},
					encoding.Attribute{Key: "xlabel", Value: "anomaly " + joinInt(as)})
			}
			n := dotNode{line: o.Line, attrs: attrs}
			nodes[o.Line] = n
			g.AddNode(n)
		}
	}
	type key struct {
		from, to int64
		kind     analyzer.EdgeKind
		word     uint64
	}
	seen := map[key]int{}
	var lines []*dotLine
	for _, nb := range d.Neighbourhoods {
		for _, e := range nb.Edges {
			k := key{e.From, e.To, e.Kind, e.Word}
			if i, ok := seen[k]; ok {
				if e.Witness {
					lines[i].attrs = witnessAttrs(lines[i].attrs)
				}
				continue
			}
			f, okf := nodes[e.From]
			t, okt := nodes[e.To]
			if !okf || !okt {
				continue
			}
			attrs := []encoding.Attribute{{Key: "label", Value: edgeLabel(e.Edge)}, {Key: "color", Value: edgeColor(e.Kind)},
				{Key: "fontcolor", Value: edgeColor(e.Kind)}, {Key: "tooltip", Value: e.Reason}}
			if e.Witness {
				attrs = witnessAttrs(attrs)
			} else {
				attrs = append(attrs, encoding.Attribute{Key: "style", Value: "dashed"})
			}
			seen[k] = len(lines)
			lines = append(lines, &dotLine{f: f, t: t, id: int64(len(lines)), attrs: attrs})
		}
	}
	lines = append(lines, crashLines(g, d, nodes, int64(len(lines)))...)
	for _, l := range lines {
		g.SetLine(*l)
	}
	b, err := dot.MarshalMulti(g, "", "", "  ")
	if err != nil {
		return err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "// pmlin check: %s\n// Render with: dot -Tsvg FILE.dot > FILE.svg\n", strings.ReplaceAll(g.label, "\n", " "))
	out.Write(b)
	out.WriteString("\n")
	_, err = io.WriteString(w, out.String())
	return err
}

// crashLines adds the crashes of the neighbourhoods as marked vertices
// (red octagons), each joined to the operations it cut off, to the reads
// after it that the evidence cites, and to the anomaly's operations
// invoked after it; the lines are numbered from id.
func crashLines(g dotGraph, d *Data, nodes map[int64]dotNode, id int64) []*dotLine {
	var out []*dotLine
	seen := map[[2]int64]bool{}
	link := func(from, to dotNode, label, style string) {
		if seen[[2]int64{from.line, to.line}] {
			return
		}
		seen[[2]int64{from.line, to.line}] = true
		out = append(out, &dotLine{f: from, t: to, id: id, attrs: []encoding.Attribute{{Key: "label", Value: label},
			{Key: "color", Value: crashColor}, {Key: "fontcolor", Value: crashColor}, {Key: "style", Value: style}}})
		id++
	}
	for _, nb := range d.Neighbourhoods {
		for _, c := range nb.Crashes {
			cn, ok := nodes[-c.Line]
			if !ok {
				label := fmt.Sprintf("crash\nline %d", c.Line)
				attrs := []encoding.Attribute{{Key: "label", Value: label}, {Key: "shape", Value: "octagon"},
					{Key: "style", Value: "filled"}, {Key: "fillcolor", Value: "#fde0dc"}, {Key: "color", Value: crashColor},
					{Key: "fontcolor", Value: crashColor}}
				if c.Story {
					attrs = append(attrs, encoding.Attribute{Key: "penwidth", Value: "2.5"})
				}
				cn = dotNode{line: -c.Line, attrs: attrs}
				nodes[-c.Line] = cn
				g.AddNode(cn)
			}
			for _, l := range c.CutOff {
				if n, ok := nodes[l]; ok {
					link(n, cn, "cut off", "dashed")
				}
			}
			for _, l := range c.Reads {
				if n, ok := nodes[l]; ok {
					link(cn, n, "read after", "dashed")
				}
			}
			for _, l := range c.After {
				if n, ok := nodes[l]; ok {
					link(cn, n, "after", "dotted")
				}
			}
		}
	}
	return out
}

// cutOffText says how an operation without a response ended.
func cutOffText(o analyzer.OpInfo) string {
	s := "pending at the end"
	if o.CrashLine > 0 {
		s = fmt.Sprintf("cut off by the crash at line %d", o.CrashLine)
	}
	if o.Completed {
		s += ", completed: it took effect"
	}
	return s
}

func witnessAttrs(attrs []encoding.Attribute) []encoding.Attribute {
	out := attrs[:0:0]
	for _, a := range attrs {
		if a.Key != "style" && a.Key != "penwidth" {
			out = append(out, a)
		}
	}
	return append(out, encoding.Attribute{Key: "style", Value: "bold"}, encoding.Attribute{Key: "penwidth", Value: "2.5"})
}

func joinInt(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
