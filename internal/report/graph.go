package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
)

// The precedence subgraph of an anomaly, in SVG: the anomaly's operations
// on an inner circle, the context and the crashes on an outer ring, each
// vertex with its values written beside it, each edge labelled by kind,
// word and value (parallel edges of one kind share an arrow and a label of
// several lines). The layout (layoutGraph) is computed apart from the
// drawing so that tests can check its geometry: no two texts overlap,
// no text covers a vertex, no edge runs through another edge's label or a
// vertex's values where any free place exists, and the drawing's box
// holds every text (its viewBox is their union, so nothing is cut at an
// edge). The page's script measures the same in the browser.

// nodeR is the radius of a vertex of the subgraph.
const nodeR = 24.0

// gvertex is a vertex of the drawing: an operation (line > 0), genesis
// (0) or a crash (the negated line of the crash).
type gvertex struct {
	line  int64
	core  bool
	op    *analyzer.OpInfo
	crash *analyzer.NeighbourCrash
}

// box is a rectangle on the drawing, for label placement.
type box struct{ x1, y1, x2, y2 float64 }

func (a box) overlaps(b box) bool {
	return a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2
}

func (a box) union(b box) box {
	return box{min(a.x1, b.x1), min(a.y1, b.y1), max(a.x2, b.x2), max(a.y2, b.y2)}
}

// crosses says whether the segment p-q runs through the box (Liang-Barsky
// clipping).
func (a box) crosses(p, q [2]float64) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := q[0]-p[0], q[1]-p[1]
	for _, c := range [4][2]float64{{-dx, p[0] - a.x1}, {dx, a.x2 - p[0]}, {-dy, p[1] - a.y1}, {dy, a.y2 - p[1]}} {
		if c[0] == 0 {
			if c[1] < 0 {
				return false
			}
			continue
		}
		r := c[1] / c[0]
		if c[0] < 0 {
			t0 = max(t0, r)
		} else {
			t1 = min(t1, r)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}

// Text metrics of the drawing's font (10px monospace: about 6 px a
// character, lines 12 px apart; fs scales them).
const (
	charW  = 6.1
	lineH  = 12.0
	valuFS = 0.9 // the values' font, 9px
)

// gtext is a text of the drawing: lines centred at x, the first
// baseline at y, and the box they take.
type gtext struct {
	x, y  float64
	lines []string
	fs    float64
	box   box
}

// placeText puts lines centred at x with the first baseline at y.
func placeText(x, y float64, lines []string, fs float64) gtext {
	n := 0
	for _, l := range lines {
		n = max(n, len([]rune(l)))
	}
	w := float64(n)*charW*fs + 4
	return gtext{x, y, lines, fs, box{x - w/2, y - 10*fs, x + w/2, y + lineH*fs*float64(len(lines)-1) + 3*fs}}
}

// gnode is a placed vertex and its values.
type gnode struct {
	v    gvertex
	p    [2]float64
	vals gtext // no lines when there are no values to show
}

// gedge is a drawn edge: one edge of the neighbourhood, or several
// parallel ones of one kind (not of the witness) sharing an arrow.
type gedge struct {
	edges []analyzer.NeighbourEdge
	q     curve
	pts   [][2]float64 // the curve as a polyline
	label gtext
}

// gcrashEdge joins a crash to an operation.
type gcrashEdge struct {
	q          curve
	cls, title string
}

// graphLayout is a subgraph placed: its vertices, edges, texts and the
// box that holds them all.
type graphLayout struct {
	nodes  []gnode
	edges  []gedge
	cedges []gcrashEdge
	view   box
}

// valueWidth is the length in characters of a line of a vertex's values;
// context vertices show at most contextLines lines of them, the
// anomaly's operations and the reads after its crashes all.
const (
	valueWidth   = 28
	contextLines = 2
)

// wrapValues packs a vertex's values ("3=0x5 4=0x7 ...") into lines of
// at most width characters (a value longer than that gets its own line),
// keeping at most maxLines, the last then marked as cut.
func wrapValues(s string, width, maxLines int) []string {
	var lines []string
	for _, part := range strings.Fields(s) {
		if n := len(lines); n > 0 && len([]rune(lines[n-1]))+1+len([]rune(part)) <= width {
			lines[n-1] += " " + part
			continue
		}
		lines = append(lines, part)
	}
	if maxLines > 0 && len(lines) > maxLines {
		lines = lines[:maxLines]
		lines[maxLines-1] = fit(lines[maxLines-1]+" …", width)
		if !strings.HasSuffix(lines[maxLines-1], "…") {
			lines[maxLines-1] += "…"
		}
	}
	return lines
}

// layoutGraph places a neighbourhood: vertices on their rings, edges as
// curves, then the vertices' values and the edges' labels, each where it
// overlaps no text or vertex and, when it can, crosses no edge.
func layoutGraph(d *Data, nb *analyzer.Neighbourhood, core map[int64]bool) *graphLayout {
	vs := graphVertices(nb, core)
	pos := layoutSubgraph(nb, vs)
	g := &graphLayout{}
	key := map[int64]bool{} // the reads after the anomaly's crashes
	for _, c := range nb.Crashes {
		for _, l := range c.Reads {
			key[l] = true
		}
	}
	var taken []box
	for _, v := range vs {
		p := pos[v.line]
		taken = append(taken, box{p[0] - nodeR, p[1] - nodeR, p[0] + nodeR, p[1] + nodeR})
		g.nodes = append(g.nodes, gnode{v: v, p: p})
	}
	g.edges = graphEdges(nb, core, pos)
	g.cedges = crashEdges(nb, pos)
	var curves [][][2]float64 // every curve drawn, as polylines
	for k := range g.edges {
		g.edges[k].pts = polyline(g.edges[k].q)
		curves = append(curves, g.edges[k].pts)
	}
	for _, c := range g.cedges {
		curves = append(curves, polyline(c.q))
	}
	crossings := func(b box, except int) int {
		n := 0
		for k, c := range curves {
			if k == except {
				continue
			}
			for j := 1; j < len(c); j++ {
				if b.crosses(c[j-1], c[j]) {
					n++
					break
				}
			}
		}
		return n
	}
	free := func(b box) bool { return !slices.ContainsFunc(taken, b.overlaps) }
	// Each text is placed among its candidates in turn (placed), then
	// those that still cross an edge try again with all others placed.
	type item struct {
		cands  []gtext
		except int // its own edge, or -1
		at     *gtext
	}
	var items []item
	place := func(it item) {
		*it.at = best(it.cands, free, func(b box) int { return crossings(b, it.except) })
		taken = append(taken, it.at.box)
		items = append(items, it)
	}

	// Values first: the anomaly's operations, then the rest.
	order := make([]int, len(g.nodes))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return boolOrder(g.nodes[b].v.core) - boolOrder(g.nodes[a].v.core)
	})
	for _, k := range order {
		n := &g.nodes[k]
		if n.v.op == nil {
			continue
		}
		maxLines := contextLines
		if n.v.core || key[n.v.line] {
			maxLines = 0
		}
		lines := wrapValues(opValues(d.Ops[n.v.line], nb.Anomaly.Words), valueWidth, maxLines)
		if len(lines) == 0 {
			continue
		}
		h := lineH * valuFS * float64(len(lines)-1)
		w := placeText(0, 0, lines, valuFS).box
		half, p := (w.x2-w.x1)/2, n.p
		below, above := p[1]+nodeR+11, p[1]-nodeR-6-h
		side := nodeR * 0.7 // beside a corner of the vertex
		cands := []gtext{
			placeText(p[0], below, lines, valuFS),
			placeText(p[0], above, lines, valuFS),
			placeText(p[0]+nodeR+4+half, p[1]-h/2+3, lines, valuFS), // right
			placeText(p[0]-nodeR-4-half, p[1]-h/2+3, lines, valuFS), // left
			placeText(p[0]+side+half, below-nodeR*0.3, lines, valuFS),
			placeText(p[0]-side-half, below-nodeR*0.3, lines, valuFS),
			placeText(p[0]+side+half, above+nodeR*0.3, lines, valuFS),
			placeText(p[0]-side-half, above+nodeR*0.3, lines, valuFS),
		}
		// Then in 16 directions, just clear of the vertex: a vertex with
		// edges all round has its values where they leave a gap.
		hh := (h + 10*valuFS + 3*valuFS) / 2
		for k := range 16 {
			a := 2 * math.Pi * float64(k) / 16
			c, s := math.Cos(a), math.Sin(a)
			r := math.Inf(1)
			if c != 0 {
				r = (nodeR + half + 2) / math.Abs(c)
			}
			if s != 0 {
				r = min(r, (nodeR+hh+2)/math.Abs(s))
			}
			cx, cy := p[0]+c*r, p[1]+s*r
			cands = append(cands, placeText(cx, cy-hh+10*valuFS, lines, valuFS))
		}
		place(item{cands, -1, &n.vals})
	}

	// Edge labels, the witness's first.
	idx := make([]int, len(g.edges))
	for k := range idx {
		idx[k] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return boolOrder(g.edges[b].edges[0].Witness) - boolOrder(g.edges[a].edges[0].Witness)
	})
	for _, k := range idx {
		e := &g.edges[k]
		place(item{labelCands(e.q, edgeLabels(e.edges)), k, &e.label})
	}
	fixed := len(taken) - len(items) // the vertices
	for k, it := range items {
		if crossings(it.at.box, it.except) == 0 {
			continue
		}
		taken = slices.Delete(taken, fixed+k, fixed+k+1)
		*it.at = best(it.cands, free, func(b box) int { return crossings(b, it.except) })
		taken = slices.Insert(taken, fixed+k, it.at.box)
	}

	// The drawing's box: everything, and a margin.
	view := taken[0]
	for _, b := range taken {
		view = view.union(b)
	}
	for _, c := range curves {
		for _, p := range c {
			view = view.union(box{p[0], p[1], p[0], p[1]})
		}
	}
	g.view = box{view.x1 - 8, view.y1 - 8, view.x2 + 8, view.y2 + 8}
	return g
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// best is the first candidate whose box is free and crosses nothing;
// failing that the free one crossing least; failing that the first.
func best(cands []gtext, free func(box) bool, cross func(box) int) gtext {
	pick, least := -1, math.MaxInt
	for k, c := range cands {
		if !free(c.box) {
			continue
		}
		n := cross(c.box)
		if n == 0 {
			return c
		}
		if n < least {
			pick, least = k, n
		}
	}
	if pick < 0 {
		return cands[0]
	}
	return cands[pick]
}

// labelCands are the places of a label on or beside curve q, nearest its
// middle first.
func labelCands(q curve, lines []string) []gtext {
	dx, dy := q.t[0]-q.s[0], q.t[1]-q.s[1]
	l := math.Max(math.Hypot(dx, dy), 1)
	nx, ny := -dy/l, dx/l
	h := lineH * float64(len(lines)-1)
	var cands []gtext
	for _, u := range []float64{0.5, 0.42, 0.58, 0.34, 0.66, 0.27, 0.73, 0.2, 0.8, 0.14, 0.86} {
		for _, off := range []float64{0, 11, -11, 22, -22, 33, -33, 44, -44, 55, -55, 66, -66} {
			// A label of several lines beside the curve moves off by half
			// its height more, so that its near edge keeps the distance.
			o := off
			if off != 0 {
				o += math.Copysign(h/2, off)
			}
			p := q.at(u)
			p = [2]float64{p[0] + nx*o, p[1] + ny*o + 3 - h/2}
			cands = append(cands, placeText(p[0], p[1], lines, 1))
		}
	}
	return cands
}

// crossesAny says whether the polyline pts runs through box b.
func crossesAny(b box, pts [][2]float64) bool {
	for j := 1; j < len(pts); j++ {
		if b.crosses(pts[j-1], pts[j]) {
			return true
		}
	}
	return false
}

// polyline samples a curve.
func polyline(q curve) [][2]float64 {
	const n = 32
	pts := make([][2]float64, n+1)
	for k := range pts {
		pts[k] = q.at(float64(k) / n)
	}
	return pts
}

// edgeLabels are the lines of a drawn edge's label: "rf @3=0x5", and for
// parallel edges merged, one more line per word ("@4=0x7").
func edgeLabels(es []analyzer.NeighbourEdge) []string {
	lines := []string{edgeLabel(es[0].Edge)}
	for _, e := range es[1:] {
		lines = append(lines, strings.TrimPrefix(edgeLabel(e.Edge), string(e.Kind)+" "))
	}
	return lines
}

// subgraph draws a neighbourhood.
func subgraph(b *strings.Builder, d *Data, nb *analyzer.Neighbourhood, core map[int64]bool) {
	g := layoutGraph(d, nb, core)
	v := g.view
	fmt.Fprintf(b, "<svg class=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"%.0f %.0f %.0f %.0f\">",
		v.x2-v.x1, v.y2-v.y1, v.x1, v.y1, v.x2-v.x1, v.y2-v.y1)
	b.WriteString(markers)
	var labels strings.Builder
	for k, e := range g.edges {
		first := e.edges[0]
		cls := "edge k-" + string(first.Kind)
		if first.Witness {
			cls += " w"
		}
		var reasons []string
		for _, x := range e.edges {
			reasons = append(reasons, x.Reason)
		}
		title := esc(strings.Join(reasons, "\n"))
		fmt.Fprintf(b, "<path class=\"%s\" data-edge=\"%d\" d=\"M%.1f %.1f Q%.1f %.1f %.1f %.1f\" marker-end=\"url(#ah-%s)\"><title>%s</title></path>",
			cls, k, e.q.s[0], e.q.s[1], e.q.m[0], e.q.m[1], e.q.t[0], e.q.t[1], first.Kind, title)
		fmt.Fprintf(&labels, "<text class=\"el k-%s%s\" data-edge=\"%d\" x=\"%.1f\" y=\"%.1f\"><title>%s</title>", first.Kind, map[bool]string{true: " w"}[first.Witness], k, e.label.x, e.label.y, title)
		writeLines(&labels, e.label)
		labels.WriteString("</text>")
	}
	for _, c := range g.cedges {
		fmt.Fprintf(b, "<path class=\"cedge %s\" d=\"M%.1f %.1f L%.1f %.1f\" marker-end=\"url(#ah-crash)\"><title>%s</title></path>",
			c.cls, c.q.s[0], c.q.s[1], c.q.t[0], c.q.t[1], esc(c.title))
	}
	for _, n := range g.nodes {
		p := n.p
		if n.v.crash != nil {
			crashVertex(b, n.v, p)
			continue
		}
		o := n.v.op
		cls := "node"
		if n.v.core {
			cls += " hl"
		}
		name, sub := fmt.Sprintf("L%d", o.Line), fmt.Sprintf("p%d %s", o.Proc, o.Kind)
		if o.Line == 0 {
			name, sub = "genesis", "initial"
		}
		fmt.Fprintf(b, "<g class=\"%s\" data-line=\"%d\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.0f\"/><text x=\"%.1f\" y=\"%.1f\">%s</text><text class=\"sub\" x=\"%.1f\" y=\"%.1f\">%s</text>",
			cls, o.Line, p[0], p[1], nodeR, p[0], p[1]-1, name, p[0], p[1]+10, esc(sub))
		if len(n.vals.lines) > 0 {
			fmt.Fprintf(b, "<text class=\"val nv\" x=\"%.1f\" y=\"%.1f\">", n.vals.x, n.vals.y)
			writeLines(b, n.vals)
			b.WriteString("</text>")
		}
		b.WriteString("</g>")
	}
	// Labels last: above every edge and vertex.
	b.WriteString(labels.String())
	b.WriteString("</svg>")
}

// writeLines writes a text's lines as tspans (one line: plain text).
func writeLines(b *strings.Builder, t gtext) {
	if len(t.lines) == 1 {
		b.WriteString(esc(t.lines[0]))
		return
	}
	for k, l := range t.lines {
		dy := "0"
		if k > 0 {
			dy = fmt.Sprintf("%.1f", lineH*t.fs)
		}
		fmt.Fprintf(b, "<tspan x=\"%.1f\" dy=\"%s\">%s</tspan>", t.x, dy, esc(l))
	}
}

// graphVertices are the neighbourhood's operations and its crashes.
func graphVertices(nb *analyzer.Neighbourhood, core map[int64]bool) []gvertex {
	var vs []gvertex
	for k := range nb.Nodes {
		o := &nb.Nodes[k]
		vs = append(vs, gvertex{line: o.Line, core: core[o.Line], op: o})
	}
	for k := range nb.Crashes {
		c := &nb.Crashes[k]
		vs = append(vs, gvertex{line: -c.Line, crash: c})
	}
	return vs
}

// crashVertex draws a crash: a red octagon naming its line, bold when it
// is part of the anomaly's story.
func crashVertex(b *strings.Builder, v gvertex, p [2]float64) {
	var pts []string
	for k := range 8 {
		a := math.Pi/8 + float64(k)*math.Pi/4
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", p[0]+nodeR*math.Cos(a), p[1]+nodeR*math.Sin(a)))
	}
	cls := "crashnode"
	if v.crash.Story {
		cls += " story"
	}
	fmt.Fprintf(b, "<g class=\"%s\" data-crash=\"%d\"><title>crash at line %d</title><polygon points=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">crash</text><text class=\"sub\" x=\"%.1f\" y=\"%.1f\">line %d</text></g>",
		cls, v.crash.Line, v.crash.Line, strings.Join(pts, " "), p[0], p[1]-1, p[0], p[1]+10, v.crash.Line)
}

// layoutSubgraph places the vertices: the core on an inner circle, the
// context and the crashes on an outer ring, each near the core vertex it
// is attached to.
func layoutSubgraph(nb *analyzer.Neighbourhood, vs []gvertex) map[int64][2]float64 {
	var inner, outer []gvertex
	for _, v := range vs {
		if v.core {
			inner = append(inner, v)
		} else {
			outer = append(outer, v)
		}
	}
	// Core in the anomaly's order.
	slices.SortStableFunc(inner, func(a, c gvertex) int {
		return slices.Index(nb.Core, a.line) - slices.Index(nb.Core, c.line)
	})
	rc := 0.0
	if len(inner) > 1 {
		rc = max(110, 34*float64(len(inner)))
	}
	ro := rc + 140
	if len(outer) > 10 {
		ro = max(ro, float64(len(outer))*(2*nodeR+30)/(2*math.Pi))
	}
	if len(outer) == 0 {
		ro = rc
	}
	// The drawing's box is computed from what is placed (layoutGraph):
	// the centre only needs to leave every coordinate positive.
	c := ro + nodeR + 55
	pos := map[int64][2]float64{}
	angle := map[int64]float64{}
	for k, v := range inner {
		a := -math.Pi/2 + 2*math.Pi*float64(k)/float64(len(inner))
		angle[v.line] = a
		pos[v.line] = [2]float64{c + rc*math.Cos(a), c + rc*math.Sin(a)}
	}
	// Context: ordered by the angle of the core vertex it is attached to.
	attached := func(v gvertex) float64 {
		if v.crash != nil {
			for _, l := range slices.Concat(v.crash.CutOff, v.crash.After, v.crash.Reads) {
				if a, ok := angle[l]; ok {
					return a
				}
			}
			return math.Pi
		}
		for _, e := range nb.Edges {
			if a, ok := angle[e.To]; ok && e.From == v.line {
				return a
			}
			if a, ok := angle[e.From]; ok && e.To == v.line {
				return a
			}
		}
		return math.Pi
	}
	slices.SortStableFunc(outer, func(a, c gvertex) int {
		x, y := attached(a), attached(c)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return int(a.line - c.line)
	})
	if len(outer) > 0 {
		start := attached(outer[0]) - math.Pi/float64(max(len(outer), 2))
		for k, v := range outer {
			a := start + 2*math.Pi*float64(k)/float64(len(outer))
			pos[v.line] = [2]float64{c + ro*math.Cos(a), c + ro*math.Sin(a)}
		}
	}
	return pos
}

// curve is a quadratic Bézier from s through control m to t.
type curve struct{ s, m, t [2]float64 }

func (q curve) at(u float64) [2]float64 {
	a, b, c := (1-u)*(1-u), 2*(1-u)*u, u*u
	return [2]float64{a*q.s[0] + b*q.m[0] + c*q.t[0], a*q.s[1] + b*q.m[1] + c*q.t[1]}
}

// edgeCurve is the curve of the j-th of k parallel edges from pf to pt
// (offset perpendicular to the pair's direction a -> z), trimmed to the
// vertices' circles.
func edgeCurve(pf, pt, a, z [2]float64, j, k int) (curve, bool) {
	dx, dy := z[0]-a[0], z[1]-a[1]
	l := math.Hypot(dx, dy)
	if l == 0 {
		return curve{}, false
	}
	nx, ny := -dy/l, dx/l
	off := 0.0
	if k > 1 {
		off = (float64(j) - float64(k-1)/2) * 34
	}
	m := [2]float64{(pf[0]+pt[0])/2 + nx*off*2, (pf[1]+pt[1])/2 + ny*off*2}
	trim := func(p [2]float64) [2]float64 {
		vx, vy := m[0]-p[0], m[1]-p[1]
		vl := math.Hypot(vx, vy)
		if vl == 0 {
			return p
		}
		return [2]float64{p[0] + vx/vl*(nodeR+2), p[1] + vy/vl*(nodeR+2)}
	}
	return curve{trim(pf), m, trim(pt)}, true
}

// graphEdges are the edges drawn: those with a core end (and the
// witness's), each witness edge alone, the others merged when parallel
// and of one kind; edges between one pair of vertices fan out.
func graphEdges(nb *analyzer.Neighbourhood, core map[int64]bool, pos map[int64][2]float64) []gedge {
	type merge struct {
		from, to int64
		kind     analyzer.EdgeKind
		w        int // the witness's edges are never merged: their index
	}
	groups := map[merge][]analyzer.NeighbourEdge{}
	var order []merge
	for k, e := range nb.Edges {
		if !e.Witness && !core[e.From] && !core[e.To] {
			continue // context to context: left to the DOT export
		}
		if _, okf := pos[e.From]; !okf {
			continue
		}
		if _, okt := pos[e.To]; !okt {
			continue
		}
		m := merge{e.From, e.To, e.Kind, -1}
		if e.Witness {
			m.w = k
		}
		if _, ok := groups[m]; !ok {
			order = append(order, m)
		}
		groups[m] = append(groups[m], e)
	}
	type pair struct{ a, b int64 }
	fan := map[pair][]int{}
	for k, m := range order {
		p := pair{min(m.from, m.to), max(m.from, m.to)}
		fan[p] = append(fan[p], k)
	}
	edges := make([]gedge, 0, len(order))
	for k, m := range order {
		p := pair{min(m.from, m.to), max(m.from, m.to)}
		j := slices.Index(fan[p], k)
		q, ok := edgeCurve(pos[m.from], pos[m.to], pos[p.a], pos[p.b], j, len(fan[p]))
		if ok {
			edges = append(edges, gedge{edges: groups[m], q: q})
		}
	}
	return edges
}

// crashEdges join each crash to what it cut off, to the reads after it
// that the evidence cites and to the anomaly's operations after it.
func crashEdges(nb *analyzer.Neighbourhood, pos map[int64][2]float64) []gcrashEdge {
	var out []gcrashEdge
	for _, c := range nb.Crashes {
		pc := pos[-c.Line]
		link := func(from, to [2]float64, title, cls string) {
			if q, ok := edgeCurve(from, to, from, to, 0, 1); ok {
				out = append(out, gcrashEdge{q, cls, title})
			}
		}
		for _, l := range c.CutOff {
			if p, ok := pos[l]; ok {
				link(p, pc, fmt.Sprintf("line %d was cut off by the crash at line %d", l, c.Line), "cut")
			}
		}
		for _, l := range c.Reads {
			if p, ok := pos[l]; ok {
				link(pc, p, fmt.Sprintf("line %d read what recovery left after the crash at line %d", l, c.Line), "read")
			}
		}
		for _, l := range c.After {
			if p, ok := pos[l]; ok && !slices.Contains(c.Reads, l) {
				link(pc, p, fmt.Sprintf("line %d was invoked after the crash at line %d", l, c.Line), "after")
			}
		}
	}
	return out
}
