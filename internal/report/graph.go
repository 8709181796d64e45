package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/analyzer"
)

// The precedence subgraph of an anomaly, in SVG: the anomaly's operations
// on an inner circle, the context and the crashes on an outer ring, each
// vertex with its values written under it, each edge labelled by kind,
// word and value. Labels are placed so that they overlap neither each
// other nor the vertices (the page's script counts what still overlaps,
// and the browser test checks it is nothing).

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

// textBox is the box of a text of n characters centred at (x, y), y its
// baseline, in the drawing's font (10px monospace, about 6 px a
// character; fs scales it).
func textBox(x, y float64, n int, fs float64) box {
	w := float64(n)*6.1*fs + 4
	return box{x - w/2, y - 10*fs, x + w/2, y + 3*fs}
}

// subgraph draws a neighbourhood.
func subgraph(b *strings.Builder, d *Data, nb *analyzer.Neighbourhood, core map[int64]bool) {
	vs := graphVertices(nb, core)
	pos, size := layoutSubgraph(nb, vs)
	fmt.Fprintf(b, "<svg class=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">", size, size, size, size)
	b.WriteString(markers)
	// Vertices and their value lines first claim their room; the edges'
	// labels are placed around them.
	var taken []box
	var nodes strings.Builder
	for _, v := range vs {
		p := pos[v.line]
		taken = append(taken, box{p[0] - nodeR, p[1] - nodeR, p[0] + nodeR, p[1] + nodeR})
		if v.crash != nil {
			crashVertex(&nodes, v, p)
			continue
		}
		o := v.op
		cls := "node"
		if v.core {
			cls += " hl"
		}
		name, sub := fmt.Sprintf("L%d", o.Line), fmt.Sprintf("p%d %s", o.Proc, o.Kind)
		if o.Line == 0 {
			name, sub = "genesis", "initial"
		}
		fmt.Fprintf(&nodes, "<g class=\"%s\" data-line=\"%d\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.0f\"/><text x=\"%.1f\" y=\"%.1f\">%s</text><text class=\"sub\" x=\"%.1f\" y=\"%.1f\">%s</text>",
			cls, o.Line, p[0], p[1], nodeR, p[0], p[1]-1, name, p[0], p[1]+10, esc(sub))
		if txt := fit(opValues(d.Ops[o.Line], nb.Anomaly.Words), 26); txt != "" {
			y := p[1] + nodeR + 11
			fmt.Fprintf(&nodes, "<text class=\"val nv\" x=\"%.1f\" y=\"%.1f\">%s</text>", p[0], y, esc(txt))
			taken = append(taken, textBox(p[0], y, len([]rune(txt)), 0.9))
		}
		nodes.WriteString("</g>")
	}
	subgraphEdges(b, nb, core, pos, taken)
	crashEdges(b, nb, pos)
	b.WriteString(nodes.String())
	b.WriteString("</svg>")
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
func layoutSubgraph(nb *analyzer.Neighbourhood, vs []gvertex) (map[int64][2]float64, float64) {
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
	size := 2*ro + 2*nodeR + 110
	c := size / 2
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
	return pos, size
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

// placeLabel finds where a label of n characters goes on curve q: the
// point along it, or beside it, nearest its middle where it overlaps
// nothing taken; failing that, the middle. It returns the baseline point
// and records the box as taken.
func placeLabel(q curve, n int, taken *[]box) [2]float64 {
	mid := q.at(0.5)
	dx, dy := q.t[0]-q.s[0], q.t[1]-q.s[1]
	l := math.Max(math.Hypot(dx, dy), 1)
	nx, ny := -dy/l, dx/l
	for _, u := range []float64{0.5, 0.42, 0.58, 0.34, 0.66, 0.27, 0.73} {
		for _, off := range []float64{0, 11, -11, 22, -22} {
			p := q.at(u)
			p = [2]float64{p[0] + nx*off, p[1] + ny*off + 3}
			bx := textBox(p[0], p[1], n, 1)
			if !slices.ContainsFunc(*taken, bx.overlaps) {
				*taken = append(*taken, bx)
				return p
			}
		}
	}
	p := [2]float64{mid[0], mid[1] + 3}
	*taken = append(*taken, textBox(p[0], p[1], n, 1))
	return p
}

// subgraphEdges draws the edges with a core end (and the witness's), each
// as an arrow labelled by kind, word and value; parallel and opposite
// edges between a pair fan out. The witness's labels are placed first.
func subgraphEdges(b *strings.Builder, nb *analyzer.Neighbourhood, core map[int64]bool, pos map[int64][2]float64, taken []box) {
	type pair struct{ a, b int64 }
	groups := map[pair][]int{}
	var order []pair
	for k, e := range nb.Edges {
		if !e.Witness && !core[e.From] && !core[e.To] {
			continue // context to context: left to the DOT export
		}
		p := pair{min(e.From, e.To), max(e.From, e.To)}
		if _, ok := groups[p]; !ok {
			order = append(order, p)
		}
		groups[p] = append(groups[p], k)
	}
	type drawn struct {
		k int
		q curve
	}
	var edges []drawn
	for _, p := range order {
		idx := groups[p]
		for j, k := range idx {
			e := nb.Edges[k]
			pf, okf := pos[e.From]
			pt, okt := pos[e.To]
			if !okf || !okt {
				continue
			}
			if q, ok := edgeCurve(pf, pt, pos[p.a], pos[p.b], j, len(idx)); ok {
				edges = append(edges, drawn{k, q})
			}
		}
	}
	slices.SortStableFunc(edges, func(x, y drawn) int {
		wx, wy := nb.Edges[x.k].Witness, nb.Edges[y.k].Witness
		switch {
		case wx && !wy:
			return -1
		case wy && !wx:
			return 1
		}
		return 0
	})
	var labels strings.Builder
	for _, ed := range edges {
		e, q := nb.Edges[ed.k], ed.q
		cls := "edge k-" + string(e.Kind)
		if e.Witness {
			cls += " w"
		}
		fmt.Fprintf(b, "<path class=\"%s\" d=\"M%.1f %.1f Q%.1f %.1f %.1f %.1f\" marker-end=\"url(#ah-%s)\"><title>%s</title></path>",
			cls, q.s[0], q.s[1], q.m[0], q.m[1], q.t[0], q.t[1], e.Kind, esc(e.Reason))
		label := edgeLabel(e.Edge)
		p := placeLabel(q, len(label), &taken)
		fmt.Fprintf(&labels, "<text class=\"el k-%s%s\" x=\"%.1f\" y=\"%.1f\"><title>%s</title>%s</text>", e.Kind, map[bool]string{true: " w"}[e.Witness], p[0], p[1], esc(e.Reason), esc(label))
	}
	b.WriteString(labels.String())
}

// crashEdges joins each crash to what it cut off, to the reads after it
// that the evidence cites and to the anomaly's operations after it.
func crashEdges(b *strings.Builder, nb *analyzer.Neighbourhood, pos map[int64][2]float64) {
	for _, c := range nb.Crashes {
		pc := pos[-c.Line]
		link := func(from, to [2]float64, title, cls string) {
			q, ok := edgeCurve(from, to, from, to, 0, 1)
			if !ok {
				return
			}
			fmt.Fprintf(b, "<path class=\"cedge %s\" d=\"M%.1f %.1f L%.1f %.1f\" marker-end=\"url(#ah-crash)\"><title>%s</title></path>",
				cls, q.s[0], q.s[1], q.t[0], q.t[1], esc(title))
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
}
