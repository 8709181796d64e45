package report

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/analyzer"
)

// HTML writes one self-contained HTML file (inline CSS, SVG and script; no
// network loads) reporting d: the verdict and counts, then per anomaly its
// witness in sentences, a timeline of its neighbourhood (a lane per
// process, operations as bars from invocation to response, crash lines,
// the anomaly's operations highlighted, omitted stretches of the history
// marked) and beside it the precedence subgraph with labelled edges.
// Hovering over an operation shows its lines and values and highlights it
// in both drawings. A linearizable history gets a short report: the
// verdict and a timeline of its first operations.
//
// After drawing, the page's script records on <body> how many
// highlighted elements it has (data-highlighted) and how many of them
// have a size on screen (data-highlighted-drawn), and data-render="ok";
// script errors are recorded in data-errors. Tests read these from the
// DOM of a headless browser.
func HTML(w io.Writer, d *Data) error {
	var b strings.Builder
	r := d.Result
	verdict, vclass := "LINEARIZABLE", "ok"
	if !r.Linearizable {
		verdict, vclass = "NOT LINEARIZABLE", "bad"
	}
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pmlin: %s: %s</title>
<script>window.__pmlinErrors=[];window.addEventListener("error",function(e){window.__pmlinErrors.push(String(e.message));if(document.body)document.body.setAttribute("data-errors",window.__pmlinErrors.join(" | "));});</script>
<style>%s</style></head>
<body>
`, esc(d.Name), verdict, css)
	fmt.Fprintf(&b, "<header><h1>%s: <span class=\"%s\">%s</span></h1>\n", esc(d.Name), vclass, verdict)
	fmt.Fprintf(&b, "<p>%s mode &middot; %d operations &middot; %d processes &middot; %d words &middot; %d crashes", r.Mode, r.Operations, r.Processes, r.Words, r.Crashes)
	if r.Dropped+r.Completed > 0 {
		fmt.Fprintf(&b, " &middot; cut-off operations: %d completed as successes, %d dropped", r.Completed, r.Dropped)
	}
	fmt.Fprintf(&b, "</p>\n<p>graph: %d vertices, %d edges (happens-before %d, reads-from %d, auxiliary %d, recovery %d)</p>\n",
		r.Vertices, r.Edges.Total(), r.Edges.HappensBefore, r.Edges.ReadsFrom, r.Edges.Auxiliary, r.Edges.Recovery)
	b.WriteString(legend)
	b.WriteString("</header>\n")

	shown := map[int64]analyzer.OpInfo{}
	remember := func(ops []analyzer.OpInfo) {
		for _, o := range ops {
			shown[o.Line] = o
		}
	}
	if r.Linearizable || len(r.Anomalies) == 0 {
		fmt.Fprintf(&b, "<section class=\"anomaly\"><h2>No anomaly</h2><p>Every order constraint of the precedence graph is consistent: the history is linearizable in %s mode. The timeline shows its first %d operations.</p>\n", r.Mode, len(d.Sample))
		b.WriteString("<div class=\"panels\"><div class=\"panel tl\"><h3>Timeline</h3>")
		timeline(&b, d, d.Sample, nil, nil)
		b.WriteString("</div></div></section>\n")
		remember(d.Sample)
	}
	for _, nb := range d.Neighbourhoods {
		anomalySection(&b, d, nb)
		remember(nb.Timeline)
		remember(nb.Nodes)
	}
	if rest := len(r.Anomalies) - len(d.Neighbourhoods); rest > 0 || r.Omitted > 0 {
		b.WriteString("<section class=\"anomaly\"><h2>More anomalies</h2><ol class=\"more\">")
		for k := len(d.Neighbourhoods); k < len(r.Anomalies); k++ {
			a := r.Anomalies[k]
			fmt.Fprintf(&b, "<li value=\"%d\"><b>%s</b>, lines %s: %s</li>", k+1, a.Kind, joinInts(a.Ops), esc(a.Explanation))
		}
		b.WriteString("</ol>")
		if r.Omitted > 0 {
			fmt.Fprintf(&b, "<p>%d more anomalies not listed.</p>", r.Omitted)
		}
		b.WriteString("</section>\n")
	}

	// Operation data for the hover box.
	type opJSON struct {
		Desc   string `json:"d"`
		Inv    string `json:"i,omitempty"`
		Ret    string `json:"r,omitempty"`
		Status string `json:"s"`
		Ret1   int64  `json:"rl,omitempty"`
		Crash  int64  `json:"cl,omitempty"`
		Done   bool   `json:"c,omitempty"`
	}
	ops := map[int64]opJSON{}
	for l, o := range shown {
		j := opJSON{Desc: o.Desc, Status: o.Status, Ret1: o.RetLine, Crash: o.CrashLine, Done: o.Completed}
		if op := d.Ops[l]; op != nil {
			j.Inv, j.Ret = op.Lines()
		}
		ops[l] = j
	}
	js, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	b.WriteString("<div id=\"tip\" role=\"tooltip\"></div>\n<script type=\"application/json\" id=\"pmlin-ops\">")
	b.Write(js)
	b.WriteString("</script>\n<script>")
	b.WriteString(script)
	b.WriteString("</script>\n</body></html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// anomalySection writes one anomaly: its witness in sentences, the
// timeline of its neighbourhood and the precedence subgraph.
func anomalySection(b *strings.Builder, d *Data, nb *analyzer.Neighbourhood) {
	a := nb.Anomaly
	fmt.Fprintf(b, "<section class=\"anomaly\" id=\"anomaly-%d\"><h2>Anomaly %d: %s &mdash; operations at lines %s", nb.Index+1, nb.Index+1, a.Kind, joinInts(a.Ops))
	if len(a.Words) > 0 {
		fmt.Fprintf(b, "; addresses %s", joinU(a.Words))
	}
	b.WriteString("</h2>\n")
	if a.Kind == analyzer.Cycle && len(a.Edges) > 0 {
		fmt.Fprintf(b, "<p>%d operations must each come before the next, and the last before the first:</p>\n", len(a.Ops))
	} else {
		fmt.Fprintf(b, "<p>%s</p>\n", esc(a.Explanation))
	}
	if len(a.Edges) > 0 {
		b.WriteString("<ol class=\"witness\">")
		for _, e := range a.Edges {
			fmt.Fprintf(b, "<li><span class=\"kind k-%s\">%s</span> %s</li>", e.Kind, esc(edgeLabel(e)), esc(e.Reason))
		}
		b.WriteString("</ol>\n")
	}
	if a.Kind == analyzer.Cycle {
		for _, s := range a.Staleness {
			fmt.Fprintf(b, "<p class=\"stale\"><b>Staleness %d.</b> %s</p>\n", s.Behind, esc(s.Reason))
		}
	}
	b.WriteString("<div class=\"panels\"><div class=\"panel tl\"><h3>Timeline</h3>")
	core := map[int64]bool{}
	for _, l := range nb.Core {
		core[l] = true
	}
	timeline(b, d, nb.Timeline, core, nb.Edges)
	b.WriteString("</div><div class=\"panel gr\"><h3>Precedence subgraph</h3>")
	subgraph(b, nb, core)
	b.WriteString("</div></div></section>\n")
}

func esc(s string) string { return html.EscapeString(s) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Timeline geometry.
const (
	tlLeft   = 10.0
	tlTop    = 30.0 // axis
	tlCol    = 16.0 // one event line, at least
	tlGap    = 16.0 // omitted lines
	tlLane   = 28.0
	tlBar    = 16.0
	tlBottom = 10.0
)

// timeline draws ops (invocation order) as bars in lanes, one per
// process. The horizontal axis is the order of the lines shown: each
// invocation, response and crash line gets a column, and a stretch of
// lines not shown gets a narrow marked gap, so that an anomaly spread over
// a million lines fits on a screen.
func timeline(b *strings.Builder, d *Data, ops []analyzer.OpInfo, core map[int64]bool, edges []analyzer.NeighbourEdge) {
	if len(ops) == 0 {
		b.WriteString("<p>(no operations)</p>")
		return
	}
	ticks, crashes := timelineTicks(d, ops)
	l := layoutTimeline(ticks, ops)
	// Lane labels stay in view: they are drawn apart from the scrolled part.
	fmt.Fprintf(b, "<div class=\"tlwrap\"><svg class=\"lanes\" xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"%.0f\">", l.height)
	for k, p := range l.procs {
		y := tlTop + float64(k)*tlLane
		fmt.Fprintf(b, "<text class=\"pl\" x=\"4\" y=\"%.0f\">p%d</text>", y+tlLane/2+4, p)
	}
	fmt.Fprintf(b, "</svg><div class=\"scroll\"><svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">", l.width, l.height, l.width, l.height)
	for k := range l.procs {
		y := tlTop + float64(k)*tlLane
		fmt.Fprintf(b, "<rect class=\"lane\" x=\"0\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/>", y, l.width, tlLane)
	}
	// Axis: line numbers where they fit.
	lastX := -100.0
	for k, t := range l.ticks {
		if l.xs[k]-lastX >= 46 {
			fmt.Fprintf(b, "<text class=\"ax\" x=\"%.0f\" y=\"12\">%d</text>", l.xs[k], t)
			lastX = l.xs[k]
		}
	}
	for _, g := range l.gaps {
		n := g.to - g.from + 1
		cls, more := "gap", ""
		if k := len(d.crashesIn(g.from, g.to)); k > 0 {
			cls, more = "gap crashed", fmt.Sprintf(", among them %d %s", k, plural(k, "crash", "crashes"))
		}
		fmt.Fprintf(b, "<g class=\"%s\"><title>%d %s not shown (lines %d-%d%s)</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/><line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/></g>",
			cls, n, plural(int(n), "line", "lines"), g.from, g.to, more, g.x-tlGap/2+2, tlTop, tlGap-4, l.height-tlTop-tlBottom, g.x, tlTop, g.x, l.height-tlBottom)
	}
	for _, c := range crashes {
		cx := l.xOf(c)
		fmt.Fprintf(b, "<g class=\"crash\"><title>crash at line %d</title><line x1=\"%.1f\" y1=\"16\" x2=\"%.1f\" y2=\"%.0f\"/><text x=\"%.1f\" y=\"26\">crash %d</text></g>", c, cx, cx, l.height-tlBottom, cx+3, c)
	}
	bars := l.bars(b, ops, core)
	timelineEdges(b, edges, bars)
	b.WriteString(markers)
	b.WriteString("</svg></div></div>")
}

// timelineTicks are the lines that get a column: the invocations,
// responses and crashes of ops, and the crash lines drawn: those that cut
// off an operation shown, and those inside a densely shown stretch (the
// others are counted in their gap).
func timelineTicks(d *Data, ops []analyzer.OpInfo) (ticks, crashes []int64) {
	var lo, hi int64 = math.MaxInt64, 0
	for _, o := range ops {
		if o.Line == 0 {
			continue
		}
		ticks = append(ticks, o.Line)
		lo, hi = min(lo, o.Line), max(hi, o.Line)
		if o.RetLine > 0 {
			ticks = append(ticks, o.RetLine)
			hi = max(hi, o.RetLine)
		}
		if o.CrashLine > 0 {
			ticks = append(ticks, o.CrashLine)
			hi = max(hi, o.CrashLine)
		}
	}
	slices.Sort(ticks)
	ticks = slices.Compact(ticks)
	for _, c := range d.crashesIn(lo, hi) {
		k, _ := slices.BinarySearch(ticks, c)
		if k > 0 && k < len(ticks) && ticks[k]-ticks[k-1] <= 64 {
			crashes = append(crashes, c)
		}
	}
	for _, o := range ops {
		if o.CrashLine > 0 && !slices.Contains(crashes, o.CrashLine) {
			crashes = append(crashes, o.CrashLine)
		}
	}
	ticks = append(ticks, crashes...)
	slices.Sort(ticks)
	return slices.Compact(ticks), crashes
}

// tlLayout places a timeline: the x of each tick, with gaps where lines
// are not shown, and a lane per process.
type tlLayout struct {
	ticks         []int64
	xs            []float64
	gaps          []tlGapPos
	end           float64 // pending at the end of the history
	width, height float64
	procs         []int32
}

type tlGapPos struct {
	x        float64
	from, to int64
}

func layoutTimeline(ticks []int64, ops []analyzer.OpInfo) *tlLayout {
	l := &tlLayout{ticks: ticks, xs: make([]float64, len(ticks))}
	// Few events get wide columns, so that bars have room for a label.
	col := min(56, max(tlCol, 740/float64(len(ticks)+1)))
	x := tlLeft + col/2
	for k, t := range ticks {
		if k > 0 {
			x += col
			if t > ticks[k-1]+1 {
				l.gaps = append(l.gaps, tlGapPos{x - col/2 + tlGap/2, ticks[k-1] + 1, t - 1})
				x += tlGap
			}
		}
		l.xs[k] = x
	}
	l.end = x + col
	for _, o := range ops {
		if o.Line != 0 && !slices.Contains(l.procs, o.Proc) {
			l.procs = append(l.procs, o.Proc)
		}
	}
	slices.Sort(l.procs)
	l.width = l.end + col
	l.height = tlTop + float64(len(l.procs))*tlLane + tlBottom
	return l
}

func (l *tlLayout) xOf(line int64) float64 {
	k, _ := slices.BinarySearch(l.ticks, line)
	return l.xs[min(k, len(l.xs)-1)]
}

func (l *tlLayout) lane(p int32) int {
	k, _ := slices.BinarySearch(l.procs, p)
	return k
}

// barPos is where an operation's bar was drawn.
type barPos struct{ x1, x2, y float64 }

// bars draws the operations as bars from invocation to response (to the
// crash, or the end, for a cut-off one) and returns where.
func (l *tlLayout) bars(b *strings.Builder, ops []analyzer.OpInfo, core map[int64]bool) map[int64]barPos {
	bars := map[int64]barPos{}
	for _, o := range ops {
		if o.Line == 0 {
			continue
		}
		x1 := l.xOf(o.Line) - 5
		var x2 float64
		open := ""
		switch {
		case o.RetLine > 0:
			x2 = l.xOf(o.RetLine) + 5
		case o.CrashLine > 0:
			x2 = l.xOf(o.CrashLine)
			open = " cut"
		default:
			x2 = l.end
			open = " cut"
		}
		y := tlTop + float64(l.lane(o.Proc))*tlLane + (tlLane-tlBar)/2
		bars[o.Line] = barPos{x1, x2, y}
		cls := "op " + o.Kind + " s-" + o.Status + open
		if !o.InGraph {
			cls += " out"
		}
		if core[o.Line] {
			cls += " hl"
		}
		fmt.Fprintf(b, "<g class=\"%s\" data-line=\"%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" rx=\"3\"/>", cls, o.Line, x1, y, max(x2-x1, 6), tlBar)
		if x2-x1 > 58 {
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\">L%d %s</text>", x1+4, y+tlBar-4, o.Line, o.Kind)
		}
		b.WriteString("</g>")
	}
	return bars
}

// timelineEdges draws the witness's edges between bars.
func timelineEdges(b *strings.Builder, edges []analyzer.NeighbourEdge, bars map[int64]barPos) {
	for _, e := range edges {
		if !e.Witness {
			continue
		}
		f, okf := bars[e.From]
		t, okt := bars[e.To]
		if !okf || !okt {
			continue
		}
		var x1, x2 float64
		if e.Kind == analyzer.HappensBefore || e.Kind == analyzer.Recovery {
			x1, x2 = f.x2, t.x1
		} else {
			x1, x2 = (f.x1+f.x2)/2, (t.x1+t.x2)/2
		}
		y1, y2 := f.y+tlBar/2, t.y+tlBar/2
		cy := min(y1, y2) - 22
		if y1 == y2 {
			cy = y1 - 26
		}
		fmt.Fprintf(b, "<path class=\"tle k-%s\" d=\"M%.1f %.1f Q%.1f %.1f %.1f %.1f\" marker-end=\"url(#ah-%s)\"><title>%s</title></path>",
			e.Kind, x1, y1, (x1+x2)/2, cy, x2, y2, e.Kind, esc(e.Reason))
	}
}

// markers are the arrowheads, one per edge kind (ids are shared by every
// SVG of the page: identical definitions, so any of them serves).
var markers = func() string {
	var b strings.Builder
	b.WriteString("<defs>")
	for _, k := range []analyzer.EdgeKind{analyzer.HappensBefore, analyzer.ReadsFrom, analyzer.Auxiliary, analyzer.Recovery} {
		fmt.Fprintf(&b, "<marker id=\"ah-%s\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0 0L10 5L0 10z\" fill=\"%s\"/></marker>", k, edgeColor(k))
	}
	b.WriteString("</defs>")
	return b.String()
}()

// nodeR is the radius of a vertex of the subgraph.
const nodeR = 24.0

// subgraph draws a neighbourhood: the anomaly's operations on a circle
// (a cycle in its order), the context around them on an outer ring, each
// edge of the multigraph as an arrow labelled by kind and word.
func subgraph(b *strings.Builder, nb *analyzer.Neighbourhood, core map[int64]bool) {
	pos, size := layoutSubgraph(nb, core)
	fmt.Fprintf(b, "<svg class=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">", size, size, size, size)
	b.WriteString(markers)
	subgraphEdges(b, nb, core, pos)
	for _, o := range nb.Nodes {
		p := pos[o.Line]
		cls := "node"
		if core[o.Line] {
			cls += " hl"
		}
		name, sub := fmt.Sprintf("L%d", o.Line), fmt.Sprintf("p%d %s", o.Proc, o.Kind)
		if o.Line == 0 {
			name, sub = "genesis", "initial"
		}
		fmt.Fprintf(b, "<g class=\"%s\" data-line=\"%d\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.0f\"/><text x=\"%.1f\" y=\"%.1f\">%s</text><text class=\"sub\" x=\"%.1f\" y=\"%.1f\">%s</text></g>",
			cls, o.Line, p[0], p[1], nodeR, p[0], p[1]-1, name, p[0], p[1]+10, esc(sub))
	}
	b.WriteString("</svg>")
}

// layoutSubgraph places the vertices: the core on an inner circle, the
// context on an outer ring, each near the core vertex it is attached to.
func layoutSubgraph(nb *analyzer.Neighbourhood, core map[int64]bool) (map[int64][2]float64, float64) {
	var inner, outer []analyzer.OpInfo
	for _, o := range nb.Nodes {
		if core[o.Line] {
			inner = append(inner, o)
		} else {
			outer = append(outer, o)
		}
	}
	// Core in the anomaly's order.
	slices.SortStableFunc(inner, func(a, c analyzer.OpInfo) int {
		return slices.Index(nb.Core, a.Line) - slices.Index(nb.Core, c.Line)
	})
	rc := 0.0
	if len(inner) > 1 {
		rc = max(90, 30*float64(len(inner)))
	}
	ro := rc + 120
	if len(outer) > 12 {
		ro = max(ro, float64(len(outer))*(2*nodeR+12)/(2*math.Pi))
	}
	if len(outer) == 0 {
		ro = rc
	}
	size := 2*ro + 2*nodeR + 70
	c := size / 2
	pos := map[int64][2]float64{}
	angle := map[int64]float64{}
	for k, o := range inner {
		a := -math.Pi/2 + 2*math.Pi*float64(k)/float64(len(inner))
		angle[o.Line] = a
		pos[o.Line] = [2]float64{c + rc*math.Cos(a), c + rc*math.Sin(a)}
	}
	// Context: ordered by the angle of the core vertex it is attached to.
	attached := func(l int64) float64 {
		for _, e := range nb.Edges {
			if e.From == l && core[e.To] {
				return angle[e.To]
			}
			if e.To == l && core[e.From] {
				return angle[e.From]
			}
		}
		return math.Pi
	}
	slices.SortStableFunc(outer, func(a, c analyzer.OpInfo) int {
		x, y := attached(a.Line), attached(c.Line)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return int(a.Line - c.Line)
	})
	if len(outer) > 0 {
		start := attached(outer[0].Line) - math.Pi/float64(max(len(outer), 2))
		for k, o := range outer {
			a := start + 2*math.Pi*float64(k)/float64(len(outer))
			pos[o.Line] = [2]float64{c + ro*math.Cos(a), c + ro*math.Sin(a)}
		}
	}
	return pos, size
}

// subgraphEdges draws the edges with a core end (and the witness's), each
// as an arrow labelled by kind and word; parallel and opposite edges
// between a pair fan out.
func subgraphEdges(b *strings.Builder, nb *analyzer.Neighbourhood, core map[int64]bool, pos map[int64][2]float64) {
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
	var labels strings.Builder
	for _, p := range order {
		idx := groups[p]
		for j, k := range idx {
			e := nb.Edges[k]
			pf, okf := pos[e.From]
			pt, okt := pos[e.To]
			if !okf || !okt {
				continue
			}
			// Offset perpendicular to the pair's canonical direction.
			a, z := pos[p.a], pos[p.b]
			dx, dy := z[0]-a[0], z[1]-a[1]
			l := math.Hypot(dx, dy)
			if l == 0 {
				continue
			}
			nx, ny := -dy/l, dx/l
			off := (float64(j) - float64(len(idx)-1)/2) * 34
			if len(idx) == 1 {
				off = 0
			}
			mx, my := (pf[0]+pt[0])/2+nx*off*2, (pf[1]+pt[1])/2+ny*off*2
			// Trim both ends to the circles, towards the control point.
			trim := func(p [2]float64) [2]float64 {
				vx, vy := mx-p[0], my-p[1]
				vl := math.Hypot(vx, vy)
				if vl == 0 {
					return p
				}
				return [2]float64{p[0] + vx/vl*(nodeR+2), p[1] + vy/vl*(nodeR+2)}
			}
			s, t := trim(pf), trim(pt)
			cls := "edge k-" + string(e.Kind)
			if e.Witness {
				cls += " w"
			}
			fmt.Fprintf(b, "<path class=\"%s\" d=\"M%.1f %.1f Q%.1f %.1f %.1f %.1f\" marker-end=\"url(#ah-%s)\"><title>%s</title></path>",
				cls, s[0], s[1], mx, my, t[0], t[1], e.Kind, esc(e.Reason))
			lx, ly := 0.25*s[0]+0.5*mx+0.25*t[0], 0.25*s[1]+0.5*my+0.25*t[1]
			fmt.Fprintf(&labels, "<text class=\"el k-%s%s\" x=\"%.1f\" y=\"%.1f\">%s</text>", e.Kind, map[bool]string{true: " w"}[e.Witness], lx, ly+3, esc(edgeLabel(e.Edge)))
		}
	}
	b.WriteString(labels.String())
}

const legend = `<p class="legend"><span class="kind k-hb">hb</span> happens-before (returned before the other was invoked) <span class="kind k-rf">rf</span> reads-from (the other read or expected a value it wrote) <span class="kind k-aux">aux</span> auxiliary (a read came before the write that replaced its value; a failed cas after a write that replaced its expected value) <span class="kind k-recovery">recovery</span> a cut-off cas took effect before its process's next operation. Highlighted: the anomaly's operations. Bars run from invocation to response; a bar cut off by a crash or the end has a dashed outline; a grey band folds lines not shown (its line is red if they hold crashes).</p>
`

const css = `
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;padding:16px 24px;color:#1d1d1f;background:#fafafa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:0 0 6px}h3{font-size:13px;margin:0 0 6px;color:#555;text-transform:uppercase;letter-spacing:.04em}
header p{margin:2px 0;color:#444}.ok{color:#137333}.bad{color:#c5221f}
.legend{font-size:12px;color:#555;max-width:1300px}
.anomaly{background:#fff;border:1px solid #ddd;border-radius:6px;padding:12px 16px;margin:14px 0}
.witness{margin:4px 0 8px;padding-left:22px}.witness li{margin:2px 0}
.kind{display:inline-block;min-width:34px;padding:0 5px;border-radius:3px;color:#fff;font:11px/17px monospace;text-align:center}
.kind.k-hb{background:#444}.kind.k-rf{background:#1f6fd1}.kind.k-aux{background:#e07b00}.kind.k-recovery{background:#8a3ccf}
.stale{background:#fff4e0;border-left:3px solid #e07b00;padding:4px 8px;margin:6px 0}
.panels{display:flex;gap:16px;align-items:flex-start}.panel{min-width:0}.panel.tl{flex:1 1 auto}.panel.gr{flex:0 0 auto}
.tlwrap{display:flex;border:1px solid #e3e3e3;background:#fff}.lanes{flex:0 0 40px;border-right:1px solid #eee}.scroll{overflow-x:auto;flex:1 1 auto}
svg text{font:10px monospace;fill:#333}
.lane{fill:#fff;stroke:#f0f0f0}.pl{font-weight:bold}.ax{fill:#888;text-anchor:middle}
.gap rect{fill:#f3f3f3}.gap line{stroke:#bbb;stroke-dasharray:2 3}.gap.crashed line{stroke:#d93025}
.crash line{stroke:#d93025;stroke-width:2;stroke-dasharray:5 3}.crash text{fill:#d93025;font-weight:bold}
.op rect{stroke:#6b8db5;fill:#dbe8f7}.op.cas rect{stroke:#5f9a6e;fill:#dcefe1}.op.cas.s-fail rect{stroke:#a08850;fill:#f4ecd6}
.op.cut rect{stroke-dasharray:4 2}.op.out rect{opacity:.45}
.op.hl rect{stroke:#c5221f!important;stroke-width:2.5;fill:#ffd6a5!important}
.op text{pointer-events:none}
.op.hover rect,.node.hover circle{stroke:#000;stroke-width:3}
.tle{fill:none;stroke-width:2;opacity:.8}
.edge{fill:none;stroke-width:1.2;opacity:.45;stroke-dasharray:4 3}.edge.w{stroke-width:2.6;opacity:1;stroke-dasharray:none}
.k-hb.edge,.k-hb.tle{stroke:#444}.k-rf.edge,.k-rf.tle{stroke:#1f6fd1}.k-aux.edge,.k-aux.tle{stroke:#e07b00}.k-recovery.edge,.k-recovery.tle{stroke:#8a3ccf}
.el{text-anchor:middle;paint-order:stroke;stroke:#fff;stroke-width:3px;font-size:10px}.el.w{font-weight:bold}
text.k-hb{fill:#444}text.k-rf{fill:#1f6fd1}text.k-aux{fill:#e07b00}text.k-recovery{fill:#8a3ccf}
.node circle{fill:#eef3f8;stroke:#6b8db5;stroke-width:1.5}.node.hl circle{fill:#ffd6a5;stroke:#c5221f;stroke-width:3}
.node text{text-anchor:middle;font-weight:bold;font-size:10px}.node text.sub{font-weight:normal;font-size:9px;fill:#555}
.more li{margin:3px 0}
#tip{position:fixed;display:none;pointer-events:none;background:#202124;color:#fff;font:12px/1.4 monospace;padding:6px 8px;border-radius:4px;max-width:640px;white-space:pre-wrap;z-index:10}
`

const script = `(function(){
var ops=JSON.parse(document.getElementById("pmlin-ops").textContent);
var tip=document.getElementById("tip");
function text(line){
  var o=ops[line];
  if(line==="0")return "genesis: the initial state";
  if(!o)return "line "+line;
  var s=o.d+"\n"+"line "+line+": "+(o.i||"(invocation)");
  if(o.r)s+="\nline "+o.rl+": "+o.r;
  else if(o.cl)s+="\ncut off by the crash at line "+o.cl+(o.c?" (completed as a success)":"");
  else s+="\n(no response: "+o.s+")"+(o.c?" (completed as a success)":"");
  return s;
}
function mark(line,on){
  var els=document.querySelectorAll('[data-line="'+line+'"]');
  for(var i=0;i<els.length;i++)els[i].classList.toggle("hover",on);
}
function move(ev){
  tip.style.left=Math.min(ev.clientX+14,window.innerWidth-660)+"px";
  tip.style.top=(ev.clientY+16)+"px";
}
var els=document.querySelectorAll("[data-line]");
for(var i=0;i<els.length;i++){
  (function(el){
    var line=el.getAttribute("data-line");
    el.addEventListener("mouseenter",function(ev){tip.textContent=text(line);tip.style.display="block";move(ev);mark(line,true);});
    el.addEventListener("mousemove",move);
    el.addEventListener("mouseleave",function(){tip.style.display="none";mark(line,false);});
  })(els[i]);
}
var scrolls=document.querySelectorAll(".scroll");
for(var k=0;k<scrolls.length;k++){
  var h=scrolls[k].querySelector(".op.hl rect");
  if(h){var bb=h.getBBox();if(bb.x+bb.width>scrolls[k].clientWidth)scrolls[k].scrollLeft=Math.max(0,bb.x-160);}
}
var hl=document.querySelectorAll(".hl"),drawn=0;
for(var j=0;j<hl.length;j++){var r=hl[j].getBoundingClientRect();if(r.width>0&&r.height>0)drawn++;}
document.body.setAttribute("data-highlighted",String(hl.length));
document.body.setAttribute("data-highlighted-drawn",String(drawn));
document.body.setAttribute("data-render","ok");
})();`
